"""``contextualize``: a retrieval note written into each chunk's context by a local model."""
from __future__ import annotations

import argparse
import json
import sys

from ctxfst_tui.cli.common import CliError, editable_document
from ctxfst_tui.cli.model_options import make_backend_from_args


def cmd_contextualize(args: argparse.Namespace) -> int:
    from ctxfst_tui.cli.contextualize_report import format_report
    from ctxfst_tui.core.contextualize.options import ContextualizeError, ContextualizeOptions
    from ctxfst_tui.core.contextualize.run import contextualize
    from ctxfst_tui.core.llm import ModelError
    from ctxfst_tui.core.llm.probe import preflight

    doc = editable_document(args.path)
    options = ContextualizeOptions(
        skip_present=args.skip_present,
        fail_fast=args.fail_fast,
        document_max_chars=args.document_max_chars,
        template=args.template,
        dry_run=args.dry_run,
    )

    def progress(p) -> None:
        if not args.json and p.status in ("ok", "failed", "skipped"):
            print(f"[{p.index}/{p.total}] {p.chunk_id}: {p.status}", file=sys.stderr)

    try:
        backend = make_backend_from_args(args)
        preflight(backend)  # a model that cannot run here: one line, before any chunk
        report = contextualize(doc, backend, options, progress=progress)
    except (ContextualizeError, ModelError) as exc:
        raise CliError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, 1) from None
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
    else:
        print(format_report(report))
    if args.dry_run:
        if not args.json and report.diff:
            print(report.diff)
    elif doc.dirty:
        try:
            doc.save()
        except OSError as exc:
            raise CliError(f"{args.path}: cannot save: {exc.strerror or exc}") from None
    return 1 if report.failed else 0
