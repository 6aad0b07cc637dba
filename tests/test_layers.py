"""The layering: import-linter's contracts (pyproject.toml) and the one runtime property they cannot see.

The contracts read every import statement, function-local ones included: `cli`, `ui` -> `services`
-> `core` (+ `config`), and no textual/rich below the UI. What they cannot see is which of those
imports actually run: the headless commands must work without loading Textual at all (start-up
time, and a CI box with no terminal), so that is checked by running them in a fresh interpreter.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def test_import_contracts_are_kept() -> None:
    p = subprocess.run([str(LINT_IMPORTS), "--no-cache", "--no-logo"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "0 broken" in p.stdout, p.stdout


def test_headless_commands_do_not_load_textual_or_rich(tmp_path: Path) -> None:
    sample = ROOT / "sample_docs"
    code = f"""
import contextlib, io, sys
from ctxfst_tui.cli import main
out, statuses = io.StringIO(), []
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
    for argv in (["validate", {str(sample)!r}],
                 ["export", {str(sample / "platform-runbook.ctxfst.md")!r}, "--output", {str(tmp_path / "chunks.json")!r}],
                 ["diagnose", {str(sample)!r}],
                 ["chunk", {str(sample / "plain-note.md")!r}],
                 ["entities", "list", {str(sample)!r}]):
        statuses.append(f"{{argv[0]}}={{main(argv)}}")
bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))
print(' '.join(statuses))
print(','.join(bad))
"""
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    ran, loaded = (p.stdout.splitlines() + [""])[:2]
    # each command ran to its end (validate and diagnose report the broken example: status 1)
    assert ran == "validate=1 export=0 diagnose=1 chunk=0 entities=0", p.stdout + p.stderr
    assert loaded == "", f"headless commands loaded: {loaded}"
    assert (tmp_path / "chunks.json").stat().st_size > 0
