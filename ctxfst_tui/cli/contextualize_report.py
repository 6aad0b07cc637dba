"""``contextualize`` without ``--json``: the plain-text lines of a run (also printed by bench/model.py)."""
from __future__ import annotations

from ctxfst_tui.core.contextualize.run import ContextualizeReport


def format_report(report: ContextualizeReport, verbose: bool = False) -> str:
    """Human-readable lines: one per chunk, then the summary."""
    lines = []
    for r in report.results:
        mark = {"ok": "ok", "failed": "FAILED", "skipped": "skipped"}[r.status]
        extra = f" ({r.reason})" if r.reason else ""
        cached = " [cached]" if r.status == "ok" and r.cached else ""
        lines.append(f"  {mark:7} {r.chunk_id}{cached}{extra}")
        if verbose and r.note:
            lines.extend("          " + ln for ln in r.note.splitlines())
    lines.append(report.summary())
    return "\n".join(lines)
