"""The headless command line: ``ctxfst-tui <subcommand>`` for scripts and CI, or the workbench.

Thin by design: parse arguments, call the core, print. Every expected failure is one line
on stderr naming the file (and line); no input file produces a traceback.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Sequence

from ctxfst_tui import __version__

SUBCOMMANDS = ("validate", "export", "diagnose", "profiles", "graph", "chunk", "convert", "entities", "contextualize", "summarize",
               "serve", "doctor")


class CliError(Exception):
    """A failure to report as one line, with an exit status."""

    def __init__(self, message: str, status: int = 2):
        super().__init__(message)
        self.status = status


def _check_path(path: str) -> None:
    """A one-line error when ``path`` is neither a folder nor a regular file (a pipe would hang)."""
    from ctxfst_tui.core.workspace.files import regular_file

    if os.path.isdir(path):
        return
    why = regular_file(path)
    if why == "no such file":
        raise CliError(f"{path}: no such file or folder")
    if why is not None:
        raise CliError(f"{path}: {why}, not read", 1)


def _warn_skipped(skipped: list) -> None:
    for s in skipped:
        print(f"warning: {s.one_line()}", file=sys.stderr)


def _docs(path: str, skipped: list | None = None) -> list:
    """The documents of a file or folder; special files in a folder are named on stderr, skipped
    (and added to ``skipped``)."""
    from ctxfst_tui.core.format.document import Document
    from ctxfst_tui.core.workspace.scan import scan_documents

    _check_path(path)
    scan = scan_documents(path, (".md",)) if os.path.isdir(path) else None
    files = scan.documents if scan is not None else [Path(path)]
    if scan is not None:
        _warn_skipped(scan.skipped)
        if skipped is not None:
            skipped.extend(scan.skipped)
    return [Document.load(f) for f in files]


def _write_output(path: str | Path, text: str | bytes, *, exclusive: bool = False) -> None:
    """Write an output file through ``core.safe_write`` (never onto a pipe or device, never over a
    read-only file; ``exclusive``: only if no file has that name, even one created a moment ago)."""
    from ctxfst_tui.core.safe_write import ABSENT, write_file

    data = text.encode("utf-8") if isinstance(text, str) else text
    try:
        write_file(Path(path), data, expected=ABSENT if exclusive else None)
    except OSError as exc:
        exists = getattr(exc, "kind", "") == "exists"
        raise CliError(f"{path}: cannot write: {exc.strerror or exc}", 1 if exists else 2) from None


def _read_json(path: str) -> Any:
    from ctxfst_tui.core.workspace.files import NotRegularFile, read_regular_text

    try:
        text = read_regular_text(path)
    except NotRegularFile as exc:
        raise CliError(f"{path}: {exc.reason}" + ("" if exc.reason == "no such file" else ", not read")) from None
    except UnicodeDecodeError as exc:
        raise CliError(f"{path}: cannot read: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise CliError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None


# ---------------------------------------------------------------- subcommands

def cmd_validate(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.format.validate import has_errors, report_json, validate

    skipped: list = []
    docs = _docs(args.path, skipped)
    reports = []
    any_errors = False
    errors = warnings = 0
    for doc in docs:
        findings = validate(doc)
        any_errors |= has_errors(findings)
        errors += sum(f.severity == "error" for f in findings)
        warnings += sum(f.severity == "warning" for f in findings)
        if args.json:
            reports.append(report_json(doc, findings))
        else:
            for f in findings:
                print(f.one_line())
    if args.json:
        single = len(docs) == 1 and Path(args.path).is_file()
        print(json.dumps(reports[0] if single else reports, ensure_ascii=False, indent=2))
    else:
        verdict = "invalid" if any_errors else "valid"
        also = f" ({len(skipped)} special file(s) skipped)" if skipped else ""
        print(f"{len(docs)} file(s) checked{also}: {errors} error(s), {warnings} warning(s) — {verdict}")
    return 1 if any_errors else 0


def cmd_export(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.format.export import ExportRefused, dumps, export_documents

    docs = _docs(args.path)
    try:
        result = export_documents(docs)
    except ExportRefused as exc:
        f = exc.finding
        more = f" (and {exc.count - 1} more error(s); run 'ctxfst-tui validate')" if exc.count > 1 else ""
        raise CliError(f"export refused: {f.one_line()}{more}", 1) from None
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    _emit_output(args.output, dumps(result, args.format, args.pretty))
    print(f"exported {len(result.chunks)} chunk(s) and {len(result.entities)} entit(y/ies) from {len(docs)} file(s) to {_output_name(args.output)}", file=sys.stderr)
    return 0


def _output_name(path: str) -> str:
    return "stdout" if str(path) == "-" else str(path)


def _emit_output(path: str, data: str | bytes) -> None:
    """export / profiles / graph output: a file written through ``_write_output`` (safe_write),
    or stdout for ``-``. The bytes are the reference's either way (no trailing newline); only on
    a terminal is a final newline added, so the shell prompt starts on its own line."""
    if str(path) != "-":
        _write_output(path, data)
        return
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if sys.stdout.isatty() and not raw.endswith(b"\n"):
        raw += b"\n"
    sys.stdout.flush()
    sys.stdout.buffer.write(raw)
    sys.stdout.buffer.flush()


def cmd_diagnose(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.diagnosis.diagnose import diagnose_workspace

    if args.apply:
        return _apply_fixes(args)
    docs = _docs(args.path)
    reports = diagnose_workspace(docs, args.level)
    # As the reference diagnose_chunks.py: exit 1 when any finding is an error, in both modes.
    status = 1 if any(i.get("severity") == "error" for r in reports for i in r.get("issues", [])) else 0
    if args.json:
        single = len(reports) == 1 and Path(args.path).is_file()
        print(json.dumps(reports[0] if single else reports, ensure_ascii=False, indent=2, default=str))
        return status
    total = 0
    for rep in reports:
        for issue in rep.get("issues", []):
            total += 1
            where = str(rep.get("filepath"))
            if issue.get("line"):
                where += f":{issue['line']}" + (f":{issue['column']}" if issue.get("column") else "")
            ids = ", ".join(map(str, issue.get("chunk_ids") or issue.get("entity_ids") or []))
            rule = issue.get("rule") or issue.get("category")
            print(f"{where}: {issue.get('severity')} [{rule}] {issue.get('message')}" + (f" ({ids})" if ids else ""))
            if args.level in ("suggest", "fix") and issue.get("suggestion"):
                print(f"    suggestion: {issue['suggestion']}")
            if args.level == "fix" and isinstance(issue.get("fix"), dict):
                from ctxfst_tui.core.workspace.fixes import describe_fix

                print(f"    fix: {describe_fix(issue['fix'])}")
    print(f"{len(reports)} file(s) diagnosed: {total} finding(s)")
    return status


def _apply_fixes(args: argparse.Namespace) -> int:
    """diagnose --apply: every machine-applicable fix, in a safe order, then one save (or a diff)."""
    from ctxfst_tui.core.diagnosis.diagnose import diagnose_workspace
    from ctxfst_tui.core.workspace.fixes import apply_fixes, collect_fixes, describe_fix

    ws = _workspace(args.path)
    reports = diagnose_workspace(ws.docs, "fix")
    # Info-level fixes (e.g. unlinking a weak link) are judgement calls: only errors and
    # warnings are fixed in bulk; the rest are offered one by one in the workbench.
    severe = [{**r, "issues": [i for i in r.get("issues", []) if i.get("severity") in ("error", "warning")]} for r in reports]
    before = {id(d): d.text for d in ws.docs}
    run = apply_fixes(ws, collect_fixes(severe))
    for fix, _record in run.applied:
        print(f"applied: {describe_fix(fix)}")
    for fix, why in run.skipped:
        print(f"skipped: {describe_fix(fix)} ({why})")
    if args.dry_run:
        import difflib

        for d in ws.docs:
            if d.text != before[id(d)]:
                sys.stdout.writelines(difflib.unified_diff(
                    before[id(d)].splitlines(keepends=True), d.text.splitlines(keepends=True), d.label, d.label))
        print(f"{len(run.applied)} fix(es) would be applied; nothing written (--dry-run)", file=sys.stderr)
        return 0
    try:
        saved = ws.save()
    except OSError as exc:
        raise CliError(f"cannot save: {exc}") from None
    print(f"{len(run.applied)} fix(es) applied, {len(run.skipped)} skipped; {len(saved)} file(s) written", file=sys.stderr)
    return 0


def cmd_profiles(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.entities.profiles import build_entity_profiles, dumps

    for option, value in (("--max-contexts", args.max_contexts), ("--top-keywords", args.top_keywords)):
        if value < 1:  # exit 1 as the reference, before reading anything
            raise CliError(f"{option} must be >= 1 (got {value})", 1)
    data = _read_json(args.input)
    try:
        out = build_entity_profiles(data, args.input, max_contexts=args.max_contexts, top_keywords=args.top_keywords)
    except ValueError as exc:
        raise CliError(f"{args.input}: {exc}", 1) from None
    _emit_output(args.output, dumps(out))
    print(f"wrote {args.output}" if args.output != "-" else "wrote to stdout", file=sys.stderr)
    return 0


def cmd_graph(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.entities import graph

    if args.top_k is not None and args.top_k < 1:  # exit 1 as the reference, before reading anything
        raise CliError(f"--top-k must be >= 1 (got {args.top_k})", 1)
    if args.min_score is not None and not 0.0 <= args.min_score <= 1.0:
        raise CliError(f"--min-score must be between 0.0 and 1.0 (got {args.min_score})", 1)
    data = _read_json(args.input)
    extra = _read_json(args.extra_edges) if args.extra_edges else None
    kwargs: dict[str, Any] = {
        "mode": args.mode,
        "extra_edges": extra,
        "on_warning": lambda msg: print(f"warning: {args.extra_edges}: {msg}", file=sys.stderr),
    }
    if args.top_k is not None:
        kwargs["top_k"] = args.top_k
    if args.min_score is not None:
        kwargs["min_score"] = args.min_score
    try:
        out = graph.build_entity_graph(data, args.input, **kwargs)
    except ValueError as exc:
        # An unknown extra-edge relation is an error, as in the reference: exit 1, nothing written.
        culprit = args.extra_edges if str(exc).startswith("extra-edges") else args.input
        raise CliError(f"{culprit}: {exc}", 1) from None
    if args.format == "graphml":
        import io

        buffer = io.BytesIO()
        graph.write_graphml(out, buffer)  # built in memory, then written like every other output
        _emit_output(args.output, buffer.getvalue())
    else:
        _emit_output(args.output, graph.dumps(out))
    print(f"wrote {args.output}" if args.output != "-" else "wrote to stdout", file=sys.stderr)
    return 0


def _chunk_options(args: argparse.Namespace):
    from ctxfst_tui.core.chunking.chunker import ChunkOptions

    kwargs: dict[str, Any] = {"mode": args.mode, "encoding": args.encoding}
    if args.unit is not None:
        kwargs["unit"] = args.unit
    if args.size is not None:
        kwargs["chunk_size"] = args.size
    if args.overlap is not None:
        kwargs["overlap"] = args.overlap
    if args.min_size is not None:
        kwargs["min_chunk_size"] = args.min_size
    if getattr(args, "embed", None):
        kwargs["embed"] = args.embed
    try:
        return ChunkOptions(**kwargs)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def _check_file(path: str) -> None:
    """A one-line error unless ``path`` is a regular file: "no such file", "a named pipe, not read"…"""
    from ctxfst_tui.core.workspace.files import regular_file

    why = regular_file(path)
    if why == "no such file":
        raise CliError(f"{path}: no such file")
    if why is not None:
        raise CliError(f"{path}: {why}, not read", 1)


def _read_text(path: str) -> str:
    """The decoded text of a file, or a one-line error naming the file and line."""
    from ctxfst_tui.core.format.document import Document

    _check_file(path)
    doc = Document.load(path)
    bad = [f for f in doc.load_findings if f.rule.startswith("file-")]
    if bad:
        raise CliError(bad[0].one_line(), 1)
    return doc.text


def _chunks_for(path: str, args: argparse.Namespace) -> list:
    from ctxfst_tui.core.chunking.chunker import chunk_text
    from ctxfst_tui.core.chunking.tokens import EncodingUnavailable

    text = _read_text(path)
    try:
        return chunk_text(text, _chunk_options(args), source=path)
    except EncodingUnavailable as exc:
        raise CliError(str(exc)) from None


def cmd_chunk(args: argparse.Namespace) -> int:
    chunks = _chunks_for(args.path, args)
    if args.json:
        print(json.dumps([c.to_json() for c in chunks], ensure_ascii=False, indent=2))
        return 0
    options = _chunk_options(args)
    width = max((len(str(c.index)) for c in chunks), default=1)
    print(f"{'#':>{width}}  {'tokens':>6}  {'chars':>6}  breadcrumb — first words")
    for c in chunks:
        words = " ".join(c.content.split()[:8])
        crumb = c.breadcrumb or "(no heading)"
        flag = " [atomic, over budget]" if c.metadata.get("oversize") else ""
        print(f"{c.index:>{width}}  {c.tokens:>6}  {c.length:>6}  {crumb} — {words}{flag}")
    total = sum(c.tokens for c in chunks)
    print(f"{len(chunks)} chunk(s), {total} tokens in all; budget {options.describe()}")
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.chunking.convert import ConvertError, convert_checked, default_target

    source = Path(args.path)
    target = Path(args.output) if args.output else default_target(source)
    if target.exists() and not args.force:
        raise CliError(f"{target}: already exists (use --force to overwrite)", 1)
    text = _read_text(args.path)
    chunks = _chunks_for(args.path, args)
    try:
        out = convert_checked(text, chunks, target, title_hint=source.stem)
    except ConvertError as exc:
        raise CliError(f"{args.path}: {exc}", 1) from None
    # Without --force the target is created exclusively: a file that appeared after the check
    # above is never replaced.
    _write_output(target, out, exclusive=not args.force)
    n = out.count("<Chunk id=")
    print(f"wrote {target}: {n} chunk(s); fill in each chunk's context and the entities next", file=sys.stderr)
    return 0


def _workspace(path: str):
    from ctxfst_tui.core.workspace.workspace import Workspace

    return Workspace(_docs(path), path)


def cmd_entities_list(args: argparse.Namespace) -> int:
    rows = _workspace(args.path).entity_table()
    if args.json:
        print(json.dumps({"entities": [r.to_json() for r in rows]}, ensure_ascii=False, indent=2))
        return 0
    print(f"{'id':32} {'name':24} {'type':10} {'chunks':>6}  aliases / documents")
    for r in rows:
        where = ", ".join(Path(d).name for d in r.declared_in) or "(declared nowhere)"
        aliases = ", ".join(r.aliases)
        print(f"{r.id:32} {str(r.name or ''):24} {str(r.type or ''):10} {r.chunks:>6}  {aliases + ' · ' if aliases else ''}{where}")
    print(f"{len(rows)} entit(y/ies)")
    return 0


def cmd_entities_suggest(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.entities.aliases import clusters_to_json, suggest_clusters

    ws = _workspace(args.path)
    clusters = suggest_clusters(ws.entity_dicts(), ws.chunk_dicts())
    if args.json:
        print(json.dumps(clusters_to_json(clusters), ensure_ascii=False, indent=2))
        return 0
    for c in clusters:
        others = [m for m in c.members if m != c.canonical]
        print(f"[{c.tier}] {c.canonical} ← {', '.join(others)}")
        for reason in c.reasons:
            print(f"    {reason}")
    sure = sum(c.tier == "sure" for c in clusters)
    print(f"{len(clusters)} cluster(s): {sure} sure, {len(clusters) - sure} to review")
    return 0


def cmd_entities_merge(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.workspace.entity_ops import EntityOpError, merge_entities

    ws = _workspace(args.path)
    try:
        result = merge_entities(ws, args.into, args.merged, dry_run=args.dry_run)
    except EntityOpError as exc:
        raise CliError(str(exc), 1) from None
    if args.dry_run:
        print(result, end="" if str(result).endswith("\n") else "\n")
        return 0
    try:
        saved = ws.save()
    except OSError as exc:
        raise CliError(f"cannot save: {exc}") from None
    print(f"merged {', '.join(args.merged)} into {args.into}; {len(saved)} file(s) written", file=sys.stderr)
    return 0


def _editable_document(path: str):
    """A CtxFST document to edit, or a one-line error when it cannot be edited safely."""
    from ctxfst_tui.core.format.document import Document

    _check_file(path)
    doc = Document.load(path)
    if doc.load_findings:
        raise CliError(doc.load_findings[0].one_line(), 1)
    if doc.data is None:
        raise CliError(f"{path}: no CtxFST frontmatter (run 'ctxfst-tui convert' first)", 1)
    return doc


def _backend(args: argparse.Namespace):
    from ctxfst_tui.core.llm import make_backend

    return make_backend(
        model_path=args.model if args.model and args.model.endswith(".gguf") else None,
        endpoint=args.endpoint,
        model=args.model,
        api=args.api,
        n_ctx=args.n_ctx,
        n_threads=args.threads,
        concurrency=args.concurrency,
        cache=not args.no_cache,
    )


def cmd_contextualize(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.contextualize.report_text import format_report
    from ctxfst_tui.core.contextualize.options import ContextualizeError, ContextualizeOptions
    from ctxfst_tui.core.contextualize.run import contextualize
    from ctxfst_tui.core.llm import ModelError
    from ctxfst_tui.core.llm.probe import preflight

    doc = _editable_document(args.path)
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
        backend = _backend(args)
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


def cmd_entities_extract(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.entities.extract import (
        apply_proposals,
        extract_entities,
        format_proposals,
    )
    from ctxfst_tui.core.llm import ModelError
    from ctxfst_tui.core.llm.probe import preflight

    doc = _editable_document(args.path)
    try:
        backend = None if args.no_model else _backend(args)
        if backend is not None:
            preflight(backend)  # a model that cannot run here: one line, not one per chunk
        props = extract_entities(doc, backend)
    except ModelError as exc:
        raise CliError(str(exc), 1) from None
    if args.json:
        print(json.dumps(props.to_json(), ensure_ascii=False, indent=2))
    else:
        print(format_proposals(props))
    if args.write:
        apply_proposals(doc, props)
        if doc.dirty:
            try:
                doc.save()
            except OSError as exc:
                raise CliError(f"{args.path}: cannot save: {exc.strerror or exc}") from None
            print(f"wrote {args.path}", file=sys.stderr)
    elif not args.json:
        print("nothing written (add --write to apply these proposals)", file=sys.stderr)
    return 0


def _add_model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="a GGUF file (default: the bundled Gemma 3 270M), or the served model name with --endpoint")
    p.add_argument("--endpoint", default=None, help="an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1")
    p.add_argument("--api", choices=("chat", "completions"), default=None, help="endpoint API (default: chat)")
    p.add_argument("--n-ctx", type=int, default=None, help="context size of the in-process model")
    p.add_argument("--threads", type=int, default=None, help="CPU threads of the in-process model")
    p.add_argument("--concurrency", type=int, default=None, help="requests in flight to an endpoint")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the completion cache")


def _add_chunk_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--unit", choices=("tokens", "chars"), default=None, help="budget unit (default chars)")
    p.add_argument("--size", type=int, default=None, help="chunk budget (default 256 tokens / 1024 chars)")
    p.add_argument("--overlap", type=int, default=None, help="overlap from the previous chunk's last sentences")
    p.add_argument("--min-size", type=int, default=None, help="smaller chunks are absorbed by a neighbour")
    p.add_argument("--encoding", default="cl100k_base", help="tiktoken encoding or OpenAI model name")
    p.add_argument("--mode", choices=("auto", "markdown", "text", "pdf"), default="auto")


def cmd_doctor(args: argparse.Namespace) -> int:
    """Versions, CPU features, model self-tests, paths and the folder's index/journals: one screen for a bug report."""
    from ctxfst_tui.core.doctor import gather

    folder = Path(args.folder)
    if not folder.is_dir():
        raise CliError(f"{folder}: no such folder")
    facts = gather(folder, run_probes=not args.no_probe, refresh=args.reprobe)
    if args.json:
        print(json.dumps(facts, ensure_ascii=False, indent=2))
    else:
        print(format_doctor(facts))
    tests = [m.get("self_test", {}) for m in facts["models"].values()]
    failed = any(t.get("outcome") in ("crashed", "hang", "error") for t in tests)
    return 1 if failed or not facts["llama_cpp"].get("installed") else 0


def _doctor_verdict(test: dict[str, Any]) -> str:
    import time

    outcome = test.get("outcome", "not run")
    if outcome == "ok":
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(test.get("checked", 0)))
        return f"ok in {test.get('seconds', 0):.1f} s ({'kept from ' if test.get('cached') else 'run '}{when})"
    if outcome == "not run":
        return f"not run: {test.get('message', '')}"
    return f"{outcome.upper()}: {test.get('message', '')}"


def format_doctor(facts: dict[str, Any]) -> str:
    """The text form of ``doctor``: aligned label/value lines in four sections."""
    lines = [f"ctxfst-tui {facts['ctxfst_tui']} doctor", ""]

    def row(label: str, value: str, indent: int = 0) -> None:
        lines.append(f"{' ' * indent}{label:<{14 - indent}}{value}")

    py, plat, llama = facts["python"], facts["platform"], facts["llama_cpp"]
    row("python", f"{py['version']} {py['implementation']} ({py['executable']})")
    row("platform", plat["system"])
    cpu = f"{plat['name']} ({plat['machine']})"
    if plat["features"]:
        cpu += ": " + " ".join(plat["features"])
    if plat.get("missing"):
        cpu += "; without " + " ".join(plat["missing"])
    row("cpu", cpu)
    row("textual", facts["textual"] or "not installed")
    if llama.get("installed"):
        row("llama_cpp", f"{llama['version']} in {llama['package']}")
        libs = " ".join(llama["libraries"]) or "no shared library found"
        row("", f"libraries {libs} (sha256 {llama['libraries_sha256'][:12]})")
        info = llama.get("system_info")
        row("", f"built for: {info}" if info else f"built for: unknown ({llama.get('system_info_problem', '')})")
    else:
        row("llama_cpp", f"not usable: {llama.get('problem', '')}")
    lines += ["", "models"]
    bundled, configured = facts["models"]["bundled"], facts["models"]["configured"]
    size = f" ({bundled['size'] / 1e6:.0f} MB)" if bundled.get("size") else ""
    row("bundled", f"{bundled.get('path') or '-'}{size}", 2)
    row("", f"self-test: {_doctor_verdict(bundled.get('self_test', {}))}", 2)
    source = configured.get("source", "bundled")
    where = f" (from {configured['origin']})" if configured.get("origin") else " (nothing configured)"
    if source == "endpoint":
        row("configured", f"endpoint {configured.get('endpoint', '')} {configured.get('model', '')}".rstrip() + where, 2)
        row("", "self-test: not run: a served model runs in its own process", 2)
    elif source == "gguf":
        row("configured", f"{configured.get('path', '')}{where}", 2)
        row("", f"self-test: {_doctor_verdict(configured.get('self_test', {}))}", 2)
    else:
        row("configured", f"the bundled model{where}", 2)
    lines += ["", "paths"]
    for label, key in (("config", "config"), ("state", "state"), ("cache", "cache"), ("models", "models"),
                       ("completions", "completions"), ("self-tests", "self_tests")):
        row(label, facts["paths"][key], 2)
    probe = facts["probe"]
    row("probe", f"{probe['command']} (timeout {probe['timeout']:g} s)", 2)
    folder = facts.get("folder")
    if folder:
        lines += ["", f"folder {folder['path']}"]
        index = folder["index"]
        row("index", f"{index['path']} {'exists' if index['exists'] else 'absent'}", 2)
        journals = folder["journals"]
        if not journals.get("available"):
            row("journals", "not kept by this version", 2)
        elif journals.get("problem"):
            row("journals", f"cannot be read: {journals['problem']}", 2)
        elif journals["pending"]:
            docs = ", ".join(d["document"] + (" (changed on disk: conflict)" if d.get("conflict") else "")
                             for d in journals["pending"])
            row("journals", f"{len(journals['pending'])} with unsaved edits: {docs} ({journals['dir']})", 2)
        else:
            row("journals", f"none ({journals['dir']})", 2)
    return "\n".join(lines)


# ---------------------------------------------------------------- parsing

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
    v.set_defaults(func=cmd_validate)

    e = sub.add_parser("export", help="write chunks.json for vector-database ingestion")
    e.add_argument("path", help="a document or a folder")
    e.add_argument("--output", "-o", default="chunks.json", help="output file ('-': stdout)")
    e.add_argument("--format", choices=("json", "jsonl"), default="json", help="jsonl: one chunk record a line")
    e.add_argument("--pretty", "-p", action="store_true", help="indent the JSON")
    e.set_defaults(func=cmd_export)

    d = sub.add_parser("diagnose", help="find quality problems (similar chunks, weak contexts, noisy entities…)")
    d.add_argument("path", help="a document or a folder (diagnosed as one workspace)")
    d.add_argument("--level", "-l", choices=("diagnose", "suggest", "fix"), default="diagnose")
    d.add_argument("--json", "-j", action="store_true", help="print the reference's JSON report (exit 1 iff an error)")
    d.add_argument("--apply", action="store_true", help="apply the fixes of every error and warning, and save")
    d.add_argument("--dry-run", action="store_true", help="with --apply: print the diff, write nothing")
    d.set_defaults(func=cmd_diagnose)

    pr = sub.add_parser("profiles", help="entity profiles from chunks.json")
    pr.add_argument("input", help="chunks.json written by 'export'")
    pr.add_argument("--output", "-o", default="entity-profiles.json", help="output file ('-': stdout)")
    pr.add_argument("--max-contexts", type=int, default=3, metavar="N", help="linked chunk contexts kept per entity (default: 3)")
    pr.add_argument("--top-keywords", type=int, default=8, metavar="N", help="usage keywords kept per entity (default: 8)")
    pr.set_defaults(func=cmd_profiles)

    g = sub.add_parser("graph", help="entity graph from chunks.json or entity-profiles.json")
    g.add_argument("input")
    g.add_argument("--output", "-o", default="entity-graph.json", help="output file ('-': stdout)")
    g.add_argument("--mode", choices=("contextual", "metadata"), default="contextual")
    g.add_argument("--top-k", type=int, default=None, help="SIMILAR edges kept per entity")
    g.add_argument("--min-score", type=float, default=None, help="lowest cosine score for a SIMILAR edge")
    g.add_argument("--extra-edges", default=None, help="JSON array of extra operational edges; an unknown relation is an error")
    g.add_argument("--format", choices=("json", "graphml"), default="json")
    g.set_defaults(func=cmd_graph)

    c = sub.add_parser("chunk", help="show where a structural chunker would cut a document")
    c.add_argument("path")
    _add_chunk_options(c)
    c.add_argument("--embed", choices=("full", "context", "content"), default=None, help="what 'text' holds")
    c.add_argument("--json", action="store_true", help="every field of every chunk")
    c.set_defaults(func=cmd_chunk)

    cv = sub.add_parser("convert", help="turn a Markdown note into a CtxFST document")
    cv.add_argument("path")
    cv.add_argument("--output", "-o", default=None, help="default: NOTE.ctxfst.md beside the note")
    cv.add_argument("--force", action="store_true", help="overwrite the output if it exists")
    _add_chunk_options(cv)
    cv.set_defaults(func=cmd_convert)

    en = sub.add_parser("entities", help="list entities, suggest alias clusters, merge entities")
    en_sub = en.add_subparsers(dest="entities_command", metavar="ACTION", required=True)
    el = en_sub.add_parser("list", help="every entity of the workspace with its links")
    el.add_argument("path")
    el.add_argument("--json", action="store_true")
    el.set_defaults(func=cmd_entities_list)
    es = en_sub.add_parser("suggest", help="clusters of entities that look like one concept")
    es.add_argument("path")
    es.add_argument("--json", action="store_true")
    es.set_defaults(func=cmd_entities_suggest)
    em = en_sub.add_parser("merge", help="merge entities into one, across every document")
    em.add_argument("path")
    em.add_argument("--into", required=True, help="the entity id to keep")
    em.add_argument("merged", nargs="+", help="entity ids merged into it")
    em.add_argument("--dry-run", action="store_true", help="print the unified diff, write nothing")
    em.set_defaults(func=cmd_entities_merge)
    ex = en_sub.add_parser("extract", help="propose entities and chunk links for a document")
    ex.add_argument("path")
    ex.add_argument("--write", action="store_true", help="append the proposals to the document")
    ex.add_argument("--no-model", action="store_true", help="the deterministic pass only")
    ex.add_argument("--json", action="store_true")
    _add_model_options(ex)
    ex.set_defaults(func=cmd_entities_extract)

    cx = sub.add_parser("contextualize", help="write a retrieval note into each chunk's context with a local model")
    cx.add_argument("path")
    _add_model_options(cx)
    cx.add_argument("--skip-present", action="store_true", help="keep chunks that already have a context")
    cx.add_argument("--fail-fast", action="store_true", help="stop at the first chunk that fails")
    cx.add_argument("--document-max-chars", type=int, default=6000, help="document text given around each chunk")
    cx.add_argument("--template", default=None, help="a prompt template file")
    cx.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    cx.add_argument("--json", action="store_true")
    cx.set_defaults(func=cmd_contextualize)

    from ctxfst_tui.core.summary.cli_support import add_summarize_arguments, run_summarize_cli

    sm = sub.add_parser("summarize", help="summary tree of a novel: scenes, chapters, book")
    add_summarize_arguments(sm)
    sm.set_defaults(func=run_summarize_cli)

    sv = sub.add_parser("serve", help="run the workbench in a web page (textual-serve), on 127.0.0.1 by default")
    sv.add_argument("folder", nargs="?", default=".", help="folder of .md / .ctxfst.md / .txt documents")
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    sv.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    sv.add_argument("--public-url", default=None, help="the URL browsers reach the server at, behind a proxy")
    _add_app_model_options(sv)
    sv.set_defaults(func=cmd_serve)

    dr = sub.add_parser("doctor", help="versions, CPU features, model self-tests, paths: one screen for a bug report")
    dr.add_argument("folder", nargs="?", default=".", help="the folder whose index and journals to report (default: .)")
    dr.add_argument("--no-probe", action="store_true", help="run no model self-test (show kept verdicts only)")
    dr.add_argument("--reprobe", action="store_true", help="run the models' self-tests again, even when a verdict is kept")
    dr.add_argument("--json", action="store_true")
    dr.set_defaults(func=cmd_doctor)
    return p


def _add_app_model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="a GGUF for model jobs (default: the bundled model), or the served model with --endpoint")
    p.add_argument("--endpoint", default=None, help="an OpenAI-compatible server for model jobs")
    p.add_argument("--n-ctx", type=int, default=None)
    p.add_argument("--threads", type=int, default=None)


def _app_model_argv(args: argparse.Namespace) -> list[str]:
    out: list[str] = []
    for flag, value in (("--model", args.model), ("--endpoint", args.endpoint), ("--n-ctx", args.n_ctx), ("--threads", args.threads)):
        if value is not None:
            out += [flag, str(value)]
    return out


def serve_command(args: argparse.Namespace) -> str:
    """The shell command textual-serve runs for each browser session: this workbench, same Python;
    ``exec`` so the session's process is the app itself (the server can end it)."""
    folder = Path(args.folder)
    if not folder.is_dir():
        raise CliError(f"{folder}: no such folder")
    return "exec " + shlex.join([sys.executable, "-m", "ctxfst_tui", str(folder.resolve()), *_app_model_argv(args)])


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the workbench over HTTP: each browser tab gets its own app process (textual-serve),
    behind a per-run token and Host/Origin checks (ctxfst_tui/serve.py); the URL with the token is
    printed once the server starts."""
    command = serve_command(args)
    from ctxfst_tui.ui.serve import GuardedServer

    server = GuardedServer(command, host=args.host, port=args.port, title="CtxFST Workbench",
                           public_url=args.public_url, folder=Path(args.folder).resolve())
    server.serve()
    return 0


def run_app(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="ctxfst-tui", description="Open the CtxFST workbench on a folder.")
    p.add_argument("folder", nargs="?", default=None, help="folder of .md / .ctxfst.md / .txt documents (default: .)")
    p.add_argument("--last", action="store_true", help="the folder the workbench had open last time")
    p.add_argument("--version", action="version", version=f"ctxfst-tui {__version__}")
    _add_app_model_options(p)
    args = p.parse_args(argv)
    if args.last:
        if args.folder is not None:
            raise CliError("give a FOLDER or --last, not both")
        from ctxfst_tui.config import load_state

        state, _problems = load_state()
        if not state.last_folder:
            raise CliError("no folder remembered yet (the state file records one when the workbench quits)")
        args.folder = state.last_folder
    folder = Path(args.folder or ".")
    if not folder.is_dir():
        raise CliError(f"{folder}: no such folder")
    from ctxfst_tui.ui.app import WorkbenchApp
    from ctxfst_tui.services.jobs import ModelSettings

    sizes = {"n_ctx": args.n_ctx, "n_threads": args.threads}
    if args.endpoint:
        settings = ModelSettings("endpoint", endpoint=args.endpoint, model=args.model or "", **sizes)
    elif args.model:
        settings = ModelSettings("gguf", model_path=args.model, **sizes)
    else:
        settings = ModelSettings(**sizes)
    from ctxfst_tui.config import state_dir
    from ctxfst_tui.core.workspace.journal import journal_dir
    from ctxfst_tui.ui.crash_guard import run_guarded

    def workbench() -> int:
        WorkbenchApp(folder, model_settings=settings, watch_disk=True).run()
        return 0

    return run_guarded(workbench, journal=str(journal_dir(folder)), crash_log=state_dir() / "logs" / "crash.log")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and (argv[0] in SUBCOMMANDS or argv[0] in ("-h", "--help")):
            args = build_parser().parse_args(argv)
            return args.func(args)
        if argv and argv[0] == "--version":
            print(f"ctxfst-tui {__version__}")
            return 0
        return run_app(argv)
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
