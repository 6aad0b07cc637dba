"""``doctor``: versions, CPU features, model self-tests and paths, one screen for a bug report."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ctxfst_tui.cli.common import CliError


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
