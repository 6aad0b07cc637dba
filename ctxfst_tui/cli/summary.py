"""``ctxfst-tui summarize``: the argument set and the command.

Usage::

    ctxfst-tui summarize NOVEL --outline [--json]                      # the tree with word counts, no model
    ctxfst-tui summarize NOVEL [--model M | --endpoint URL] [--max-chapters N] [-o tree.json] [--format json|markdown]
    ctxfst-tui summarize NOVEL --stale                                 # after editing: the stale scenes and their ancestors

A summary run prints progress on stderr, saves ``NOVEL.summary.json`` beside the manuscript
(or ``--store PATH``) as it goes, and ends with one line of counts
(``nodes N, model calls N, cache hits N, failed N``, then ``, extractive N`` when N nodes got an
extractive summary: their model answers were all rejected, so they hold their own sentences,
``"extractive": true`` in the JSON) — on stdout when the tree goes to a file, on stderr when the
tree itself is printed. Exit status: 0 (extractive nodes included: every node has a summary),
1 when a node has no summary or the model could not be used, 2 for bad input, 130 when
interrupted (run again to resume).
Errors are one line on stderr: ``ctxfst-tui: ...``.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxfst_tui.cli.model_options import add_model_options, make_backend_from_args

if TYPE_CHECKING:  # the summary core is imported when the command runs, not when the parser is built
    from ctxfst_tui.core.summary.summarizer import SummaryProgress, SummarySettings


def add_summarize_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("novel", help="a manuscript (.txt or .md)")
    p.add_argument("--outline", action="store_true", help="print the tree with word counts; no model call")
    p.add_argument("--json", action="store_true", help="with --outline: the tree as JSON")
    add_model_options(p)
    p.add_argument("--max-chapters", type=int, default=None, metavar="N",
                   help="summarize only the first N chapters (and the book from them)")
    p.add_argument("--node", default=None, metavar="ID", help="summarize only this subtree (ids as in the JSON: c3, c3.s2, p1)")
    p.add_argument("--stale", action="store_true",
                   help="only what edits made stale (~): the edited scenes and their chapters and book, "
                        "as the workbench does after a save; nothing never summarized")
    p.add_argument("--output", "-o", default=None, help="write the tree here (default: print it)")
    p.add_argument("--format", choices=("json", "markdown"), default=None,
                   help="json: the tree with summaries; markdown: a readable outline (default: json, markdown for .md)")
    p.add_argument("--store", default=None, help="the summary store (default: NOVEL.summary.json beside the manuscript)")
    p.add_argument("--scene-words", type=int, default=None, help="word limit of a scene summary (150)")
    p.add_argument("--chapter-words", type=int, default=None, help="word limit of a chapter summary (300)")
    p.add_argument("--book-words", type=int, default=None, help="word limit of the book summary (500)")
    p.add_argument("--context-sentences", type=int, default=None,
                   help="sentences of the previous scene given with each scene (2)")
    p.add_argument("--style", choices=("auto", "fewshot", "instruct"), default="auto",
                   help="prompt style (auto: instruct for chat models, few-shot for base models)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines")


def settings_from_args(args: argparse.Namespace) -> SummarySettings:
    from ctxfst_tui.core.summary.summarizer import SummarySettings

    s = SummarySettings()
    for attr, name in (("scene_words", "scene_words"), ("chapter_words", "chapter_words"),
                       ("book_words", "book_words"), ("context_sentences", "context_sentences")):
        v = getattr(args, attr, None)
        if v is not None:
            if v < 0 or (name != "context_sentences" and v < 10):
                raise ValueError(f"--{attr.replace('_', '-')} {v} is too small")
            setattr(s, name, int(v))
    if getattr(args, "book_words", None) is not None:
        s.part_words = s.book_words
    s.style = getattr(args, "style", None) or "auto"
    mc = getattr(args, "max_chapters", None)
    if mc is not None:
        if mc < 1:
            raise ValueError(f"--max-chapters {mc}: give at least 1")
        s.max_chapters = int(mc)
    return s


def _fmt_seconds(s: float | None) -> str:
    if s is None:
        return "?"
    s = int(round(s))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def _err(msg: str) -> None:
    print(f"ctxfst-tui: {msg}", file=sys.stderr)


def _write(path: str, text: str) -> None:
    from ctxfst_tui.core.safe_write import write_file

    write_file(Path(path), text.encode("utf-8"))


def run_summarize_cli(args: argparse.Namespace, *, backend: Any = None, cancel: threading.Event | None = None) -> int:
    """The ``summarize`` subcommand (``backend``: for tests; default from the model options)."""
    from ctxfst_tui.core.llm.base import ModelError
    from ctxfst_tui.core.llm.probe import preflight
    from ctxfst_tui.core.summary.segment import SegmentError, SegmentSettings
    from ctxfst_tui.core.summary.session import NovelSession
    from ctxfst_tui.core.summary.store import StoreError
    from ctxfst_tui.core.summary.refresh import refresh_plan
    from ctxfst_tui.core.summary.summarizer import SummaryReport
    from ctxfst_tui.core.summary.tree import markdown_outline, outline_text

    try:
        session = NovelSession.open(args.novel, store=getattr(args, "store", None), segment_settings=SegmentSettings())
    except (SegmentError, StoreError) as exc:
        _err(str(exc))
        return 2
    ms = session.manuscript
    out_path = getattr(args, "output", None)
    if getattr(args, "outline", False):
        text = (json.dumps(ms.outline_json(), ensure_ascii=False, indent=2) + "\n") if getattr(args, "json", False) \
            else outline_text(ms)
        return _emit(text, out_path)
    try:
        settings = settings_from_args(args)
    except ValueError as exc:
        _err(str(exc))
        return 2
    if not any(not sc.front_matter and sc.words for sc in ms.root.scenes()):
        _err(f"{args.novel}: no text to summarize")
        return 2
    stale = getattr(args, "stale", False)
    if stale and getattr(args, "node", None):
        _err("--stale re-summarizes the whole tree's stale nodes; it takes no --node")
        return 2
    if getattr(args, "node", None) and ms.root.find(args.node) is None:
        _err(f"{args.novel}: no node {args.node!r} (see --outline --json for the tree, ids as c3 / c3.s2 / p1)")
        return 2
    fmt = getattr(args, "format", None) or ("markdown" if out_path and out_path.lower().endswith((".md", ".markdown")) else "json")
    quiet = getattr(args, "quiet", False)

    def progress(p: SummaryProgress) -> None:
        if quiet or p.status == "running":
            return
        flag = " (extractive)" if p.extractive else ""
        print(f"[{p.index}/{p.total}] {p.node_id} {p.title}: {p.status}{flag} "
              f"(calls {p.model_calls}, cached {p.cache_hits}, reused {p.reused}, ETA {_fmt_seconds(p.eta)})",
              file=sys.stderr, flush=True)

    if stale and not refresh_plan(ms).nodes:  # nothing edited since the summaries: no model is loaded
        print(SummaryReport().counts_line(), file=sys.stdout if out_path else sys.stderr, flush=True)
        if not quiet:
            print(f"nothing stale in {session.store}", file=sys.stderr)
        return 0
    try:
        be = backend if backend is not None else make_backend_from_args(args)
        preflight(be)  # a model that cannot run here: one line, before any node
        report = session.summarize(be, settings, only=getattr(args, "node", None), cancel=cancel, progress=progress,
                                   stale=stale)
    except ModelError as exc:
        _err(str(exc))
        return 1
    except StoreError as exc:
        _err(str(exc))
        return 2
    model = session.document(be, settings).get("model", {}).get("model", "")
    if fmt == "markdown":
        text = markdown_outline(ms, model=str(model))
    else:
        text = json.dumps(session.stored, ensure_ascii=False, indent=1) + "\n"
    status = _emit(text, out_path, quiet_ok=True)
    if status:
        return status
    counts = report.counts_line()
    print(counts, file=sys.stdout if out_path else sys.stderr, flush=True)
    if report.error:
        _err(f"stopped: {report.error} (progress saved in {session.store}; run again to resume)")
        return 1
    if report.cancelled:
        _err(f"interrupted: progress saved in {session.store}; run again to resume")
        return 130
    if not quiet:
        print(f"summary store: {session.store}", file=sys.stderr)
    return 1 if report.failed else 0


def _emit(text: str, out_path: str | None, quiet_ok: bool = False) -> int:
    if out_path:
        try:
            _write(out_path, text)
        except OSError as exc:
            _err(f"{out_path}: cannot write: {exc.strerror or exc}")
            return 2
        return 0
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        return 0
    return 0

