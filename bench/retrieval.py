#!/usr/bin/env python3
"""Retrieval benchmark: index build, re-index, embedding floor, query latency, memory, eval tables.

Everything is measured in one run on the same texts, so the ratios hold on a noisy machine:

* **floor** — the bare candding ``passage_embed`` of exactly the texts the index embeds (chunks,
  then entity profiles), in the embedder's batch size;
* **cold index** — ``build_index`` into an empty folder (target ≤ 1.2× the floor, the mean of the
  floor timed just before and just after it);
* **re-index** — one chunk edited in one file, ``build_index`` again (target ≤ 2 % of cold);
* **query latency** — p50/p95 per mode over the corpus's own headings as questions, at corpus size
  and at ``--copies``× (the corpus copied into sub-folders; copies reuse the vectors of the first,
  so only the unique texts are embedded). Targets at 25k chunks: p50 ≤ 50 ms bm25/entity, ≤ 100 ms
  hybrid. Translation is excluded (``Searcher.search`` never translates);
* **memory** — peak RSS of this process after each stage;
* **eval** — ``ctxfst-tui eval`` on both benchmarks of ../shared/retrieval (k = 3).

    .venv/bin/python bench/retrieval.py [--corpus ../shared/corpus/markdown] [--copies 10] [--quick]
    .venv/bin/python bench/retrieval.py --corpus FOLDER_OF_CTXFST_DOCS --embed none --copies 1 --no-eval

``--quick``: the first 0.08 MB of the corpus, 3 copies, 15 queries, eval without translation.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared"

from ctxfst_tui.core.retrieval.corpus import load_corpus  # noqa: E402
from ctxfst_tui.core.retrieval.embedders import BundledEmbedder  # noqa: E402
from ctxfst_tui.core.retrieval.index import build_index, lancedb  # noqa: E402
from ctxfst_tui.core.retrieval.query import Searcher  # noqa: E402

MODES = ("bm25", "entity", "vector", "hybrid", "auto")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


class ReusingEmbedder:
    """The bundled embedder under the same name, answering a text it already embedded from memory:
    the copies of the 10× corpus cost no embedding, their index is the real thing."""

    def __init__(self, inner: BundledEmbedder):
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.seen: dict[str, Any] = {}
        self.embedded = 0

    def embed_passages(self, texts: Sequence[str], **kw: Any) -> Any:
        import numpy as np

        new = [t for t in dict.fromkeys(texts) if t not in self.seen]
        if new:
            for t, v in zip(new, self.inner.embed_passages(new)):
                self.seen[t] = v
            self.embedded += len(new)
        return np.stack([self.seen[t] for t in texts]) if texts else np.zeros((0, self.dim), dtype="float32")

    def embed_query(self, text: str) -> Any:
        return self.inner.embed_query(text)


def copy_corpus(src: Path, dst: Path, max_mb: float | None) -> list[Path]:
    """The corpus's notes copied under ``dst`` (the first files up to ``max_mb``, all when None)."""
    files = sorted(p for p in src.rglob("*") if p.suffix in (".md", ".txt") and p.is_file() and p.name != "SOURCES.txt")
    if max_mb:
        kept, size = [], 0
        for f in files:
            if kept and size + f.stat().st_size > max_mb * 1e6:
                break
            kept.append(f)
            size += f.stat().st_size
        files = kept
    out = []
    for f in files:
        target = dst / f.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, target)
        out.append(target)
    return out


def floor_seconds(model: BundledEmbedder, texts: list[str]) -> float:
    """The bare candding embed of ``texts`` in the embedder's batches: nothing but the model."""
    t0 = time.perf_counter()
    for i in range(0, len(texts), model.batch_size):
        model._model.passage_embed(texts[i:i + model.batch_size])
    return time.perf_counter() - t0


def edit_one_chunk(files: list[Path]) -> None:
    """Change one word in the middle of the biggest file: one chunk's text changes."""
    f = max(files, key=lambda p: p.stat().st_size)
    text = f.read_text(encoding="utf-8")
    mid = text.index(" the ", len(text) // 2)
    f.write_text(text[:mid] + " THE edited " + text[mid + 5:], encoding="utf-8")


def questions(searcher: Searcher, n: int) -> list[str]:
    """The corpus's own headings (last breadcrumb part), spread evenly: questions it can answer."""
    heads = sorted({(r["breadcrumb"] or "").split(" > ")[-1].strip("# ") for r in searcher.rows.values()} - {""})
    step = max(1, len(heads) // n)
    return heads[::step][:n] or ["how does it work"]


def entity_questions(corpus: Any, n: int) -> list[str]:
    """Questions naming the corpus's entities (spread evenly): what the entity signal answers."""
    names = sorted({e.names[0] for e in corpus.entities.values() if e.names})
    step = max(1, len(names) // n)
    return [f"how is {name} used" for name in names[::step][:n]]


def latency(searcher: Searcher, qs: list[str]) -> dict[str, tuple[float, float]]:
    out = {}
    for mode in MODES:
        if mode in ("vector", "hybrid", "auto") and not searcher.has_vectors:
            continue
        searcher.search(qs[0], mode=mode, k=5)  # warm: the embedder, lancedb's caches
        times = []
        for q in qs:
            t0 = time.perf_counter()
            searcher.search(q, mode=mode, k=5)
            times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        out[mode] = (statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))])
    return out


def print_latency(label: str, chunks: int, lat: dict[str, tuple[float, float]]) -> None:
    cells = "  ".join(f"{m} {p50:.1f}/{p95:.1f}" for m, (p50, p95) in lat.items())
    print(f"  {label} ({chunks} chunks), p50/p95 ms: {cells}")


def eval_table(name: str, source: Path, queries: Path, work: Path, translate: bool) -> None:
    from ctxfst_tui.cli import main

    folder = work / name
    folder.mkdir()
    shutil.copy(source, folder)
    argv = ["eval", str(folder / source.name), str(queries), "-k", "3"] + ([] if translate else ["--no-translate"])
    buf = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(buf):
        code = main(argv)
    print(f"\n{name} ({time.perf_counter() - t0:.1f} s{'' if translate else ', no translation'}), exit {code}:")
    print(buf.getvalue().rstrip())


def progress(stage: str, done: int, total: int, _last: list[float] = [0.0]) -> None:
    if done == total or time.monotonic() - _last[0] >= 10:
        _last[0] = time.monotonic()
        print(f"  {stage}: {done}/{total}", file=sys.stderr, flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, default=SHARED / "corpus" / "markdown")
    p.add_argument("--copies", type=int, default=10)
    p.add_argument("--queries", type=int, default=40)
    p.add_argument("--max-mb", type=float, help="only the first files of the corpus up to this size")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-eval", action="store_true", help="skip the eval tables")
    p.add_argument("--embed", choices=("bundled", "none"), default="bundled",
                   help="none: no vectors (no floor; bm25 and entity latency), e.g. on a folder of CtxFST documents")
    args = p.parse_args()
    if args.quick:
        args.max_mb, args.queries = args.max_mb or 0.08, 15
        args.copies = 3 if args.copies == p.get_default("copies") else args.copies
    print(f"load average {os.getloadavg()[0]:.1f} at start; {os.cpu_count()} cores")

    t0 = time.perf_counter()
    lancedb()
    print(f"import lancedb: {time.perf_counter() - t0:.1f} s (once per process)")
    with tempfile.TemporaryDirectory(prefix="bench-retrieval-") as tmp:
        work = Path(tmp)
        notes = work / "corpus"
        files = copy_corpus(args.corpus, notes, args.max_mb)
        mb = sum(f.stat().st_size for f in files) / 1e6
        corpus = load_corpus(notes)
        print(f"corpus: {len(files)} files, {mb:.2f} MB, {len(corpus.chunks)} chunks, {len(corpus.entities)} entities")

        model = BundledEmbedder() if args.embed == "bundled" else None
        uri = str(work / "index")
        if model is None:
            stats = build_index(corpus, uri, None, progress=progress)  # cold, no vectors
            cold = stats.seconds
            print(f"\ncold index without vectors: {cold:.1f} s; peak RSS {peak_rss_mb():.0f} MB")
        else:
            texts = [c.embed_text for c in corpus.chunks]
            from ctxfst_tui.core.retrieval.index import _profile_texts

            profiles = _profile_texts(corpus)
            texts += [profiles.get(e.id) or "\n".join(e.names) for e in corpus.entities.values()]
            # floor, cold index, floor again: a load that drifts during the run weighs on both sides
            before = floor_seconds(model, texts)
            stats = build_index(corpus, uri, model, progress=progress)  # cold
            cold = stats.seconds
            after = floor_seconds(model, texts)
            floor = (before + after) / 2
            print(f"\nembedding floor (bare candding, {len(texts)} texts): {floor:.1f} s = {len(texts) / floor:.0f} texts/s "
                  f"(the mean of {before:.1f} s before the cold index and {after:.1f} s after it)")
            print(f"cold index: {cold:.1f} s ({stats.embed_seconds:.1f} s embedding) = {cold / floor:.2f}× the floor "
                  f"(target ≤ 1.20×); beyond embedding {cold - stats.embed_seconds:.2f} s "
                  f"= {(cold - stats.embed_seconds) / floor * 100:.1f} % of the floor; peak RSS {peak_rss_mb():.0f} MB")

        edit_one_chunk(files)
        re = build_index(load_corpus(notes), uri, model)
        print(f"re-index after one edited chunk: {re.seconds:.2f} s, {re.embedded} embedded, {re.reused} reused "
              f"= {re.seconds / cold * 100:.1f} % of cold (target ≤ 2 %)")

        print("\nquery latency (translation excluded):")
        searcher = Searcher(uri, embedder_factory=lambda name: model)
        qs = questions(searcher, args.queries)
        if corpus.entities:  # half the questions name an entity
            qs = qs[:args.queries // 2] + entity_questions(corpus, args.queries - args.queries // 2)
        print_latency("1×", len(searcher.rows), latency(searcher, qs))
        print(f"  peak RSS {peak_rss_mb():.0f} MB")

        big = work / "big"
        for i in range(args.copies):
            shutil.copytree(notes, big / f"copy{i}")
        reusing = ReusingEmbedder(model) if model is not None else None
        big_corpus = load_corpus(big)
        t0 = time.perf_counter()
        big_stats = build_index(big_corpus, str(work / "big-index"), reusing)
        print(f"  {args.copies}× index: {len(big_corpus.chunks)} chunks in {time.perf_counter() - t0:.1f} s "
              f"({reusing.embedded if reusing else 0} unique texts embedded, {big_stats.embed_seconds:.1f} s of it)")
        big_searcher = Searcher(str(work / "big-index"), embedder_factory=lambda name: reusing)
        print_latency(f"{args.copies}×", len(big_searcher.rows), latency(big_searcher, qs))
        print(f"  peak RSS {peak_rss_mb():.0f} MB")

        retrieval = SHARED / "retrieval"
        if retrieval.is_dir() and not args.no_eval:
            eval_table("ch22", retrieval / "ch22" / "benchmark.ctxfst.md", retrieval / "ch22" / "queries.yaml",
                       work, translate=not args.quick)
            eval_table("career-kb", retrieval / "career-kb" / "chunks.json", retrieval / "career-kb" / "queries.yaml",
                       work, translate=not args.quick)
        print(f"\npeak RSS {peak_rss_mb():.0f} MB; load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
