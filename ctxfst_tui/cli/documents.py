"""``validate``, ``export`` and ``diagnose`` (with ``--apply``): the document checks and the export.

Their outputs and exit statuses are the reference scripts' (the conformance suite compares them).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ctxfst_tui.cli.common import CliError, emit_output, load_documents, load_workspace, output_name, save_workspace
from ctxfst_tui.core.text.plural import count


def cmd_validate(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.format.validate import has_errors, report_json, validate

    skipped: list = []
    docs = load_documents(args.path, skipped)
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
        also = f" ({count(len(skipped), 'special file')} skipped)" if skipped else ""
        print(f"{count(len(docs), 'file')} checked{also}: {count(errors, 'error')}, {count(warnings, 'warning')} — {verdict}")
    return 1 if any_errors else 0


def cmd_export(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.format.export import ExportRefused, dumps, export_documents

    docs = load_documents(args.path)
    try:
        result = export_documents(docs)
    except ExportRefused as exc:
        f = exc.finding
        more = f" (and {count(exc.count - 1, 'more error')}; run 'ctxfst-tui validate')" if exc.count > 1 else ""
        raise CliError(f"export refused: {f.one_line()}{more}", 1) from None
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    emit_output(args.output, dumps(result, args.format, args.pretty))
    print(f"exported {count(len(result.chunks), 'chunk')} and {count(len(result.entities), 'entity')} "
          f"from {count(len(docs), 'file')} to {output_name(args.output)}", file=sys.stderr)
    return 0


def cmd_diagnose(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.diagnosis.diagnose import diagnose_workspace

    if args.apply:
        return _apply_fixes(args)
    docs = load_documents(args.path)
    reports = diagnose_workspace(docs, args.level)
    # As the reference diagnose_chunks.py: exit 1 when any finding is an error, in both modes.
    status = 1 if any(i.get("severity") == "error" for r in reports for i in r.get("issues", [])) else 0
    if args.json:  # a finding repeated over many chunks of a document: one object with its members
        from ctxfst_tui.core.diagnosis.grouping import group_report_issues

        reports = [{**r, "issues": group_report_issues(r.get("issues", []), str(r.get("filepath")))} for r in reports]
        single = len(reports) == 1 and Path(args.path).is_file()
        _print_json(reports[0] if single else reports)
        return status
    total = _print_findings(reports, args.level)
    print(f"{count(len(reports), 'file', grouped=True)} diagnosed: {count(total, 'finding', grouped=True)}")
    return status


def _print_json(obj: object) -> None:
    """Print ``json.dumps(obj, ensure_ascii=False, indent=2, default=str)`` as it is encoded: the
    report of 17,500 chunks is 80 MB of JSON, which as one string (two bytes a character once one
    is not Latin-1), the list of its pieces and its UTF-8 copy put 350 MB on top of the report."""
    pieces: list[str] = []
    for piece in json.JSONEncoder(ensure_ascii=False, indent=2, default=str).iterencode(obj):
        pieces.append(piece)
        if len(pieces) >= 8192:
            sys.stdout.write("".join(pieces))
            pieces.clear()
    pieces.append("\n")
    sys.stdout.write("".join(pieces))


def _print_findings(reports: list[dict], level: str) -> int:
    """One line a finding; a finding repeated over many chunks or files is one line with its count,
    a pair of chunks in two files one line, not one in each, and past ``GROUP_OVER`` single lines
    of one rule the rest of it one line (``readable_findings``). Returns how many findings that is."""
    from ctxfst_tui.core.diagnosis.grouping import GROUP_OVER, SHOWN, Group, More, readable_findings
    from ctxfst_tui.core.workspace.fixes import describe_fix

    total = 0
    for item in readable_findings([(str(r.get("filepath")), i) for r in reports for i in r.get("issues", [])]):
        where, issue = (item.members[0][0], item.first) if isinstance(item, Group) else item
        total += len(item.members) if isinstance(item, Group) else 1
        if issue.get("line"):
            where += f":{issue['line']}" + (f":{issue['column']}" if issue.get("column") else "")
        rule = issue.get("rule") or issue.get("category")
        suggestion = issue.get("suggestion")
        if isinstance(item, Group):
            names, what = item.names()
            files = len(item.files())
            spread = f" in {count(files, 'file', grouped=True)}" if what != "files" and files > 1 else ""
            more = f" … and {len(names) - SHOWN:,} more" if len(names) > SHOWN else ""
            shown = "most paired first: " if item.pairs else f"first {SHOWN}: " if len(names) > SHOWN else ""
            print(f"{where}: {issue.get('severity')} [{rule}] {item.message()} — {len(names):,} {what}{spread} "
                  f"({shown}{', '.join(names[:SHOWN])}{more})")
            suggestion = item.suggestion() if suggestion else suggestion
        else:
            names = [str(x) for x in issue.get("chunk_ids") or issue.get("entity_ids") or []]
            ids = ", ".join(names[:SHOWN if len(names) > GROUP_OVER else None])
            if len(names) > GROUP_OVER:  # one finding about hundreds of chunks: its first ones
                ids += f" … and {len(names) - SHOWN:,} more"
            print(f"{where}: {issue.get('severity')} [{rule}] {issue.get('message')}" + (f" ({ids})" if ids else ""))
        if level in ("suggest", "fix") and suggestion:
            print(f"    suggestion: {suggestion}")
        also = f" (and {len(item.members) - 1:,} like it)" if isinstance(item, Group) else ""
        if isinstance(item, More):
            also = f" (the first's; each of the {len(item.members) - 1:,} others has its own)"
        if level == "fix" and isinstance(issue.get("fix"), dict):
            print(f"    fix: {describe_fix(issue['fix'])}{also}")
        elif level == "fix" and issue.get("fix_withheld"):
            print(f"    no fix: {issue['fix_withheld']}")
    return total


def _apply_fixes(args: argparse.Namespace) -> int:
    """diagnose --apply: every machine-applicable fix, in a safe order, then one save (or a diff).

    Only fixes that create no finding as bad as their own are offered (``fix_safety``); each is
    checked again after the fixes before it. A fix that would leave a milder finding (a draft
    context to rewrite) is listed as needing review and applied only with ``--with-drafts``. The
    workspace is diagnosed again at the end: any finding the fixes created is listed ("created: ...")."""
    from ctxfst_tui.core.diagnosis.diagnose import diagnose_workspace
    from ctxfst_tui.core.diagnosis.fix_safety import REVIEW, apply_checked_fixes, describe_finding
    from ctxfst_tui.core.workspace.fixes import describe_fix

    ws = load_workspace(args.path)
    reports = diagnose_workspace(ws.docs, "fix")
    # Info-level fixes (e.g. unlinking a weak link) are judgement calls: only errors and
    # warnings are fixed in bulk; the rest are offered one by one in the workbench.
    before = {id(d): d.text for d in ws.docs}
    run, created, review = apply_checked_fixes(ws, reports, ("error", "warning"), with_drafts=args.with_drafts)
    skipped = [(fix, why) for fix, why in run.skipped if not why.startswith(REVIEW)]
    changed = [d for d in ws.docs if d.text != before[id(d)]]
    if args.json:
        report = {
            "applied": [describe_fix(fix) for fix, _record in run.applied],
            "not_applied": [_review_json(r) for r in review],
            "skipped": [{"fix": describe_fix(fix), "op": fix.get("op"), "reason": why} for fix, why in skipped],
            "created": [_finding_json(label, i) for label, i in created],
            "dry_run": bool(args.dry_run),
        }
        if not args.dry_run:
            report["written"] = [str(p) for p in save_workspace(ws)]
        print(json.dumps(report, ensure_ascii=False, indent=2, default=str))
        return 0
    for fix, _record in run.applied:
        print(f"applied: {describe_fix(fix)}")
    for fix, why in skipped:
        print(f"skipped: {describe_fix(fix)} ({why})")
    for r in review:
        what = describe_finding(*r.finding) if r.finding else describe_fix(r.fix)
        made = "; ".join(f"{i.get('severity')} [{i.get('rule')}] {i.get('message')}" for _, i in r.would_create)
        print(f"needs review (not applied): {what} — '{describe_fix(r.fix)}' would create {made}")
    for label, issue in created:
        print(f"created: {describe_finding(label, issue)}")
    tail = f"; {count(len(review), 'fix')} to review, not applied (--with-drafts applies them)" if review else ""
    if args.dry_run:
        import difflib

        for d in changed:
            sys.stdout.writelines(difflib.unified_diff(
                before[id(d)].splitlines(keepends=True), d.text.splitlines(keepends=True), d.label, d.label))
        print(f"{count(len(run.applied), 'fix')} would be applied{tail}; nothing written (--dry-run)", file=sys.stderr)
        return 0
    saved = save_workspace(ws)
    print(f"{count(len(run.applied), 'fix')} applied, {len(skipped)} skipped{tail}; {count(len(saved), 'file')} written",
          file=sys.stderr)
    return 0


def _finding_json(label: str, issue: dict) -> dict:
    return {"filepath": label, "rule": issue.get("rule"), "severity": issue.get("severity"),
            "chunk_ids": issue.get("chunk_ids") or [], "entity_ids": issue.get("entity_ids") or [],
            "message": issue.get("message")}


def _review_json(r) -> dict:
    """A fix left for review: the finding it fixes, the fix, and the rules of what it would create."""
    from ctxfst_tui.core.workspace.fixes import describe_fix

    label, issue = r.finding or ("", {})
    return {"rule": issue.get("rule"), "severity": issue.get("severity"), "document": label,
            "chunk_ids": issue.get("chunk_ids") or [], "entity_ids": issue.get("entity_ids") or [],
            "message": issue.get("message"), "fix": describe_fix(r.fix), "op": r.fix.get("op"),
            "would_create": list(dict.fromkeys(i.get("rule") for _, i in r.would_create))}
