"""The headless command line: ``ctxfst-tui <subcommand>`` for scripts and CI, or the workbench.

Thin by design: parse arguments, call the core, print. Every expected failure is one line
on stderr naming the file (and line); no input file produces a traceback. This module
assembles the parser and runs it; each group of subcommands lives in its own module
(``documents``, ``chunking``, ``entities``, ``contextualize``, ``summary``, ``workbench``,
``doctor``), the model options in ``model_options``, what they share in ``common``.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from ctxfst_tui import __version__
from ctxfst_tui.cli import chunking, contextualize, doctor, documents, entities, models, retrieval, summary, workbench
from ctxfst_tui.cli.chunking import add_chunk_options
from ctxfst_tui.cli.common import CliError
from ctxfst_tui.cli.model_options import add_app_model_options, add_model_options

SUBCOMMANDS = ("validate", "export", "diagnose", "profiles", "graph", "chunk", "convert", "entities", "contextualize", "summarize",
               "index", "query", "eval", "serve", "doctor", "models")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ctxfst-tui",
        description="A terminal workbench for CtxFST documents. Without a subcommand, opens the workbench on FOLDER.",
    )
    p.add_argument("--version", action="version", version=f"ctxfst-tui {__version__}")
    sub = p.add_subparsers(dest="command", metavar="SUBCOMMAND")

    v = sub.add_parser("validate", help="check documents against the CtxFST rules")
    v.add_argument("path", help="a document or a folder (searched recursively for .md files)")
    v.add_argument("--json", action="store_true", help="print findings as JSON")
    v.set_defaults(func=documents.cmd_validate)

    e = sub.add_parser("export", help="write chunks.json for vector-database ingestion")
    e.add_argument("path", help="a document or a folder")
    e.add_argument("--output", "-o", default="chunks.json", help="output file ('-': stdout)")
    e.add_argument("--format", choices=("json", "jsonl"), default="json", help="jsonl: one chunk record a line")
    e.add_argument("--pretty", "-p", action="store_true", help="indent the JSON")
    e.set_defaults(func=documents.cmd_export)

    d = sub.add_parser("diagnose", help="find quality problems (similar chunks, weak contexts, noisy entities…)")
    d.add_argument("path", help="a document or a folder (diagnosed as one workspace)")
    d.add_argument("--level", "-l", choices=("diagnose", "suggest", "fix"), default="diagnose")
    d.add_argument("--json", "-j", action="store_true", help="print the reference's JSON report (exit 1 iff an error)")
    d.add_argument("--apply", action="store_true", help="apply the fixes of every error and warning, and save")
    d.add_argument("--dry-run", action="store_true", help="with --apply: print the diff, write nothing")
    d.add_argument("--with-drafts", action="store_true",
                   help="with --apply: also apply fixes that leave a milder finding to review (a [DRAFT] context)")
    d.set_defaults(func=documents.cmd_diagnose)

    pr = sub.add_parser("profiles", help="entity profiles from chunks.json")
    pr.add_argument("input", help="chunks.json written by 'export'")
    pr.add_argument("--output", "-o", default="entity-profiles.json", help="output file ('-': stdout)")
    pr.add_argument("--max-contexts", type=int, default=3, metavar="N", help="linked chunk contexts kept per entity (default: 3)")
    pr.add_argument("--top-keywords", type=int, default=8, metavar="N", help="usage keywords kept per entity (default: 8)")
    pr.set_defaults(func=entities.cmd_profiles)

    g = sub.add_parser("graph", help="entity graph from chunks.json or entity-profiles.json")
    g.add_argument("input")
    g.add_argument("--output", "-o", default="entity-graph.json", help="output file ('-': stdout)")
    g.add_argument("--mode", choices=("contextual", "metadata"), default="contextual")
    g.add_argument("--top-k", type=int, default=None, help="SIMILAR edges kept per entity")
    g.add_argument("--min-score", type=float, default=None, help="lowest cosine score for a SIMILAR edge")
    g.add_argument("--extra-edges", default=None, help="JSON array of extra operational edges; an unknown relation is an error")
    g.add_argument("--format", choices=("json", "graphml"), default="json")
    g.set_defaults(func=entities.cmd_graph)

    c = sub.add_parser("chunk", help="show where a structural chunker would cut a document")
    c.add_argument("path")
    add_chunk_options(c)
    c.add_argument("--embed", choices=("full", "context", "content"), default=None, help="what 'text' holds")
    c.add_argument("--json", action="store_true", help="every field of every chunk")
    c.set_defaults(func=chunking.cmd_chunk)

    cv = sub.add_parser("convert", help="turn a Markdown note into a CtxFST document")
    cv.add_argument("path")
    cv.add_argument("--output", "-o", default=None, help="default: NOTE.ctxfst.md beside the note")
    cv.add_argument("--force", action="store_true", help="overwrite the output if it exists")
    add_chunk_options(cv)
    cv.set_defaults(func=chunking.cmd_convert)

    en = sub.add_parser("entities", help="list entities, suggest alias clusters, merge entities")
    en_sub = en.add_subparsers(dest="entities_command", metavar="ACTION", required=True)
    el = en_sub.add_parser("list", help="every entity of the workspace with its links")
    el.add_argument("path")
    el.add_argument("--json", action="store_true")
    el.set_defaults(func=entities.cmd_entities_list)
    es = en_sub.add_parser("suggest", help="clusters of entities that look like one concept")
    es.add_argument("path")
    es.add_argument("--json", action="store_true")
    es.set_defaults(func=entities.cmd_entities_suggest)
    em = en_sub.add_parser("merge", help="merge entities into one, across every document")
    em.add_argument("path")
    em.add_argument("--into", required=True, help="the entity id to keep")
    em.add_argument("merged", nargs="+", help="entity ids merged into it")
    em.add_argument("--dry-run", action="store_true", help="print the unified diff, write nothing")
    em.set_defaults(func=entities.cmd_entities_merge)
    ex = en_sub.add_parser("extract", help="propose entities and chunk links for a document")
    ex.add_argument("path")
    ex.add_argument("--write", action="store_true", help="append the proposals to the document")
    ex.add_argument("--no-model", action="store_true", help="the deterministic pass only")
    ex.add_argument("--json", action="store_true")
    add_model_options(ex)
    ex.set_defaults(func=entities.cmd_entities_extract)

    cx = sub.add_parser("contextualize", help="write a retrieval note into each chunk's context with a local model")
    cx.add_argument("path")
    add_model_options(cx)
    cx.add_argument("--skip-present", action="store_true", help="keep chunks that already have a context")
    cx.add_argument("--fail-fast", action="store_true", help="stop at the first chunk that fails")
    cx.add_argument("--document-max-chars", type=int, default=6000, help="document text given around each chunk")
    cx.add_argument("--template", default=None, help="a prompt template file")
    cx.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    cx.add_argument("--json", action="store_true")
    cx.set_defaults(func=contextualize.cmd_contextualize)

    sm = sub.add_parser("summarize", help="summary tree of a novel: scenes, chapters, book")
    summary.add_summarize_arguments(sm)
    sm.set_defaults(func=summary.run_summarize_cli)

    sv = sub.add_parser("serve", help="run the workbench in a web page (textual-serve), on 127.0.0.1 by default")
    sv.add_argument("folder", nargs="?", default=".", help="folder of .md / .ctxfst.md / .txt documents")
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    sv.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    sv.add_argument("--public-url", default=None, help="the URL browsers reach the server at, behind a proxy")
    add_app_model_options(sv)
    sv.set_defaults(func=workbench.cmd_serve)

    dr = sub.add_parser("doctor", help="versions, CPU features, model self-tests, paths: one screen for a bug report")
    dr.add_argument("folder", nargs="?", default=".", help="the folder whose index and journals to report (default: .)")
    dr.add_argument("--no-probe", action="store_true", help="run no model self-test (show kept verdicts only)")
    dr.add_argument("--reprobe", action="store_true", help="run the models' self-tests again, even when a verdict is kept")
    dr.add_argument("--json", action="store_true")
    dr.set_defaults(func=doctor.cmd_doctor)

    retrieval.add_parsers(sub)
    models.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and (argv[0] in SUBCOMMANDS or argv[0] in ("-h", "--help")):
            args = build_parser().parse_args(argv)
            return args.func(args)
        if argv and argv[0] == "--version":
            print(f"ctxfst-tui {__version__}")
            return 0
        return workbench.run_app(argv)
    except CliError as exc:
        print(f"ctxfst-tui: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # last line of defence: one line, never a traceback
        if os.environ.get("CTXFST_DEBUG"):
            raise
        print(f"ctxfst-tui: internal error: {type(exc).__name__}: {exc} (set CTXFST_DEBUG=1 for details)", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
