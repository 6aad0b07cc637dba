"""Benchmark of the recursive novel summaries on chapters of ``../shared/corpus/novels/``.

For each novel the chapters ``--from`` .. ``--from + --chapters - 1`` (default: the first 3)
form a small book that is summarized scene → chapter → book with the default model (the
bundled Gemma 3 270M, in-process), and, as a naive baseline, each chapter is summarized in
one call on its text truncated to the context window (same few-shot prompt, chapter limit,
no retry, no name filter).

Reported per level (scene / chapter / book, and the baseline):

* ``calls`` — model calls (retries included); ``seconds`` — wall time of those calls;
* ``compr.`` — compression ratio: source words / summary words (nodes with a summary);
* ``over`` — answers over the word limit (before the retry / the cut to the limit);
* ``echo/empty`` — answers rejected as empty or echoing the source or the prompt (incl.
  copying one child summary); ``names`` — answers rejected because every sentence named
  someone absent from the source; ``joined`` — merges made by joining child summaries after two
  rejected model merges; ``extr.`` — nodes whose model answers were all rejected and that hold an
  extractive summary (their own sentences) instead; ``none`` — nodes left without a summary;
* ``faithful`` — share of the capitalised names in the summaries that occur in their source
  (target ≥ 0.95); ``raw`` — the same on the model's answers before the name filter;
* ``coverage`` — share of each chapter's (the book's) five most frequent names that its
  summary mentions.

Compression, faithfulness and coverage are measured on the model's summaries only (an extract is
the source's own sentences). Each novel, and all of them, end with the line
``summaries: model M/N (share), extractive E/N (share), none X/N (share) (target: none = 0)``.

Usage: ``python bench/summaries.py [--chapters N] [--from K] [--novel pride|frankenstein]
[--model GGUF | --endpoint URL [--model NAME]] [--n-ctx N] [--threads N] [--cache] [--show] [--json]``.
The default run (3 chapters of each novel, fresh cache) takes a few minutes on 2 cores.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ctxfst_tui.core.llm import make_backend  # noqa: E402
from ctxfst_tui.core.summary.prompts import check_answer, clean_answer, scene_prompt  # noqa: E402
from ctxfst_tui.core.summary.segment import load_manuscript  # noqa: E402
from ctxfst_tui.core.summary.summarizer import TOKEN_MARGIN, Summarizer, SummarySettings, resolve_style  # noqa: E402
from ctxfst_tui.core.summary.text import lower_vocabulary, mentions, name_faithfulness, top_names  # noqa: E402
from ctxfst_tui.core.text.words import count_words  # noqa: E402
from ctxfst_tui.core.summary.tree import Manuscript, Node  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "novels"
NOVELS = {"pride": "pride_and_prejudice.txt", "frankenstein": "frankenstein_84-0.txt"}
LEVEL_OF = {"scene": "scene", "piece": "scene", "chapter": "chapter", "part": "chapter", "group": "chapter", "book": "book"}
LEVELS = ("scene", "chapter", "book", "baseline")


@dataclass
class Row:
    calls: int = 0
    seconds: float = 0.0
    source_words: int = 0
    summary_words: int = 0
    over: int = 0
    echo_empty: int = 0
    names_rejects: int = 0
    failed: int = 0  # nodes with no summary ("none")
    extractive: int = 0
    joined: int = 0
    names_found: int = 0
    names_total: int = 0
    raw_found: int = 0
    raw_total: int = 0
    cov_hit: int = 0
    cov_total: int = 0
    nodes: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, other: "Row") -> None:
        for k, v in other.__dict__.items():
            if isinstance(v, (int, float)):
                setattr(self, k, getattr(self, k) + v)

    def ratio(self, a: int, b: int) -> str:
        return f"{a / b:.2f}" if b else "-"

    def cells(self) -> list[str]:
        return [str(self.nodes), str(self.calls), f"{self.seconds:.0f}",
                f"{self.source_words / self.summary_words:.1f}" if self.summary_words else "-",
                str(self.over), str(self.echo_empty), str(self.names_rejects), str(self.joined), str(self.extractive),
                str(self.failed),
                self.ratio(self.names_found, self.names_total), self.ratio(self.raw_found, self.raw_total),
                self.ratio(self.cov_hit, self.cov_total) if self.cov_total else "-"]

    def to_json(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "examples"}
        d["faithfulness"] = self.names_found / self.names_total if self.names_total else None
        d["faithfulness_raw"] = self.raw_found / self.raw_total if self.raw_total else None
        d["coverage"] = self.cov_hit / self.cov_total if self.cov_total else None
        d["compression"] = self.source_words / self.summary_words if self.summary_words else None
        d["seconds"] = round(self.seconds, 2)
        return d


HEADER = ["nodes", "calls", "seconds", "compr.", "over", "echo/empty", "names", "joined", "extr.", "none", "faithful",
          "raw", "coverage"]


def shares(rows: dict[str, Row]) -> dict[str, Any]:
    """Nodes of the hierarchy (scene, chapter, book) with a model summary, an extractive one, none."""
    n = sum(rows[k].nodes for k in ("scene", "chapter", "book") if k in rows)
    ext = sum(rows[k].extractive for k in ("scene", "chapter", "book") if k in rows)
    none = sum(rows[k].failed for k in ("scene", "chapter", "book") if k in rows)
    model = n - ext - none
    share = (lambda k: round(k / n, 3) if n else None)
    return {"nodes": n, "model": model, "extractive": ext, "none": none,
            "model_share": share(model), "extractive_share": share(ext), "none_share": share(none)}


def shares_line(rows: dict[str, Row]) -> str:
    s = shares(rows)
    n = s["nodes"] or 1
    return (f"summaries: model {s['model']}/{s['nodes']} ({s['model'] / n:.2f}), extractive {s['extractive']}/{s['nodes']} "
            f"({s['extractive'] / n:.2f}), none {s['none']}/{s['nodes']} ({s['none'] / n:.2f}) (target: none = 0)")


def sub_book(ms: Manuscript, start: int, n: int) -> Manuscript:
    """A book made of chapters ``start`` .. ``start + n - 1`` (1-based) of ``ms`` (same text, same spans)."""
    chapters = ms.root.chapters()[start - 1:start - 1 + n]
    if not chapters:
        raise SystemExit(f"{ms.path}: no chapter {start}")
    root = Node("book", ms.root.title, chapters[0].start, chapters[-1].end, sum(c.words for c in chapters),
                children=list(chapters), id="book")
    return Manuscript(ms.text, root, ms.path, ms.root.title, ms.body, ms.removed)


def evaluate(ms: Manuscript, report, settings: SummarySettings) -> dict[str, Row]:
    rows = {lvl: Row() for lvl in ("scene", "chapter", "book")}
    for c in report.calls:
        r = rows[LEVEL_OF.get(c.kind, "chapter")]
        r.calls += 0 if c.cached else 1
        r.seconds += c.seconds
        if c.category == "over_limit":
            r.over += 1
        elif c.category in ("echo", "prompt", "empty"):
            r.echo_empty += 1
        elif c.category == "invented":
            r.names_rejects += 1
        node = ms.root.find(c.node.split("~")[0])
        src = ms.source_text(node) if node is not None else ""
        if src:
            f, t = name_faithfulness(clean_answer(c.raw, "", c.finish_reason), src)
            r.raw_found += f
            r.raw_total += t
    for node in ms.root.walk():
        if node.front_matter:
            continue
        r = rows[LEVEL_OF[node.kind]]
        r.nodes += 1
        if node.status != "done" or not node.summary:
            r.failed += 1
            continue
        if node.extractive:  # the source's own sentences: not a measure of the model
            r.extractive += 1
            continue
        if any("joining the child summaries" in f for f in node.flags):
            r.joined += 1
        src = ms.source_text(node)
        r.source_words += count_words(src)
        r.summary_words += count_words(node.summary)
        f, t = name_faithfulness(node.summary, src, lower_vocabulary(src))
        r.names_found += f
        r.names_total += t
        if node.kind in ("chapter", "book"):
            names = top_names(src, 5)
            r.cov_total += len(names)
            r.cov_hit += sum(1 for n in names if mentions(node.summary, n))
    return rows


def baseline(ms: Manuscript, backend: Any, settings: SummarySettings, style: str) -> Row:
    """One call per chapter on its text cut to what fits the window (no retry, no name filter)."""
    row = Row()
    limit = settings.chapter_words
    ctx = int(backend.context_size)
    for ch in ms.root.chapters():
        src = ms.source_text(ch)
        words = src.split()
        text = src
        prompt = scene_prompt(text, "", limit=limit, style=style, tokens_per_word=settings.tokens_per_word,
                              book=ms.root.title, where=ch.title, subject=False)
        # truncate to the window: drop words from the end until the prompt fits
        lo, hi = 0, len(words)
        if backend.count_tokens(prompt.text) + prompt.max_tokens + TOKEN_MARGIN > ctx:
            while lo < hi:
                mid = (lo + hi + 1) // 2
                p = scene_prompt(" ".join(words[:mid]), "", limit=limit, style=style,
                                 tokens_per_word=settings.tokens_per_word, subject=False)
                if backend.count_tokens(p.text) + p.max_tokens + TOKEN_MARGIN <= ctx:
                    lo = mid
                else:
                    hi = mid - 1
            text = " ".join(words[:lo])
            prompt = scene_prompt(text, "", limit=limit, style=style, tokens_per_word=settings.tokens_per_word,
                                  subject=False)
        t0 = time.perf_counter()
        c = backend.complete(prompt.text, max_tokens=prompt.max_tokens, stop=prompt.stop or None,
                             temperature=settings.temperature)
        row.seconds += c.seconds or (time.perf_counter() - t0)
        row.calls += 0 if c.cached else 1
        row.nodes += 1
        v = check_answer(c.text, prompt=prompt, source=src, echo_reference=text, limit=limit,
                         finish_reason=c.finish_reason, ground_names=False)
        if v.category == "over_limit":
            row.over += 1
        elif v.category in ("echo", "prompt", "empty"):
            row.echo_empty += 1
        out = clean_answer(c.text, prompt.prefix, c.finish_reason)
        if not out:
            row.failed += 1
            continue
        row.source_words += count_words(src)
        row.summary_words += count_words(out)
        f, t = name_faithfulness(out, src)
        row.names_found += f
        row.names_total += t
        row.raw_found += f
        row.raw_total += t
        names = top_names(src, 5)
        row.cov_total += len(names)
        row.cov_hit += sum(1 for n in names if mentions(out, n))
        row.examples.append(f"{ch.title}: {out}")
    return row


def table(rows: dict[str, Row]) -> str:
    widths = [10] + [max(len(h), 6) for h in HEADER]
    lines = ["| " + " | ".join(["level"] + HEADER) + " |", "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    for lvl in LEVELS:
        if lvl in rows:
            lines.append("| " + " | ".join([lvl] + rows[lvl].cells()) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chapters", type=int, default=3, help="chapters of each novel (default 3)")
    ap.add_argument("--from", dest="start", type=int, default=1, help="first chapter, 1-based (default 1)")
    ap.add_argument("--novel", choices=sorted(NOVELS), action="append", help="only this novel (repeatable)")
    ap.add_argument("--model", default=None, help="a GGUF file, or the served model name with --endpoint")
    ap.add_argument("--endpoint", default=None)
    ap.add_argument("--n-ctx", type=int, default=None)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--cache", action="store_true", help="use the completion cache (timings then mean little)")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--show", action="store_true", help="print the chapter and book summaries")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    backend = make_backend(model_path=args.model if args.model and args.model.endswith(".gguf") else None,
                           endpoint=args.endpoint, model=args.model, n_ctx=args.n_ctx, n_threads=args.threads,
                           cache=args.cache)
    settings = SummarySettings()
    style = resolve_style(backend, settings.style)
    totals = {lvl: Row() for lvl in LEVELS}
    per_novel: dict[str, Any] = {}
    t_all = time.perf_counter()
    for key in args.novel or sorted(NOVELS, reverse=True):
        path = CORPUS / NOVELS[key]
        if not path.exists():
            print(f"{path}: not found, skipped", file=sys.stderr)
            continue
        ms = sub_book(load_manuscript(path), args.start, args.chapters)
        t0 = time.perf_counter()
        report = Summarizer(backend, settings).run(ms)
        wall = time.perf_counter() - t0
        rows = evaluate(ms, report, settings)
        if not args.no_baseline:
            rows["baseline"] = baseline(ms, backend, settings, style)
        for lvl, r in rows.items():
            totals[lvl].add(r)
        titles = ", ".join(c.title for c in ms.root.chapters())
        per_novel[key] = {"chapters": titles, "words": ms.root.words, "wall_seconds": round(wall, 1),
                          "counts": report.counts_line(), "levels": {k: v.to_json() for k, v in rows.items()},
                          "summaries": shares(rows),
                          "book_summary": ms.root.summary,
                          "chapter_summaries": {c.title: c.summary for c in ms.root.chapters()},
                          "baseline": rows.get("baseline").examples if "baseline" in rows else []}
        if not args.json:
            print(f"\n## {ms.root.title} — {titles} ({ms.root.words:,} words, {len(ms.root.scenes())} scenes)")
            print(f"hierarchical run: {wall:.0f} s, {report.counts_line()}\n")
            print(table(rows))
            print("\n" + shares_line(rows))
            if args.show:
                print(f"\nbook: {ms.root.summary}")
                for c in ms.root.chapters():
                    print(f"\n{c.title} [{c.status}{'; ' + '; '.join(c.flags) if c.flags else ''}]: {c.summary}")
                for ex in per_novel[key]["baseline"]:
                    print(f"\nbaseline {ex}")
            sys.stdout.flush()
    total_wall = time.perf_counter() - t_all
    if args.json:
        print(json.dumps({"model": getattr(getattr(backend, "inner", backend), "info", lambda: {})(),
                          "settings": settings.to_json(), "novels": per_novel,
                          "totals": {k: v.to_json() for k, v in totals.items() if v.nodes},
                          "summaries": shares(totals),
                          "wall_seconds": round(total_wall, 1)}, indent=2, ensure_ascii=False, default=str))
    else:
        print(f"\n## all novels ({total_wall:.0f} s)\n")
        print(table({k: v for k, v in totals.items() if v.nodes}))
        print("\n" + shares_line(totals))
        allf = sum(totals[k].names_found for k in ("scene", "chapter", "book"))
        allt = sum(totals[k].names_total for k in ("scene", "chapter", "book"))
        print(f"\nfaithfulness of the hierarchy (all levels): {allf / allt:.2f} (target >= 0.95)" if allt else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
