"""``ctxfst-tui models``: the models on this machine, as the workbench's model settings list them.

The list is :func:`ctxfst_tui.core.llm.discovery.discover`'s; this module only prints it: three
lines a model (what, its size, chat template and kept self-test verdict, where), the current one
marked ``*``, then where it looked. Paths are never cut, so one can be copied into ``--model``.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

PAD = " " * 11


def add_parser(sub: Any) -> None:
    m = sub.add_parser("models", help="the GGUF files and local model servers found on this machine")
    m.add_argument("--json", action="store_true", help="print the list as JSON")
    m.add_argument("--no-ports", action="store_true", help="ask no server on localhost's usual ports")
    m.set_defaults(func=cmd_models)


def _tilde(path: str) -> str:
    home = str(Path.home())
    return "~" + path[len(home):] if path == home or path.startswith(home + os.sep) else path


def _current_settings() -> tuple[Any, Any]:
    """(the model settings in use — config's [model], else the remembered ones, else the bundled
    model, as the workbench decides — and the config)."""
    from ctxfst_tui.config import load_config, load_state
    from ctxfst_tui.core.llm.settings import ModelSettings

    config = load_config()
    remembered = config.model or load_state()[0].model
    try:
        return ModelSettings(**remembered) if remembered else ModelSettings(), config
    except TypeError:
        return ModelSettings(), config


def model_lines(model: Any, verdict: str | None, current: bool) -> list[str]:
    from ctxfst_tui.core.llm.discovery import size_words

    mark = "*" if current else " "
    also = f" (also {', '.join(model.aliases)})" if model.aliases else ""
    lines = [f"{mark} {model.kind:<8} {model.name}{also}"]
    if model.kind == "server":
        if model.problem:
            lines.append(f"{PAD}{model.problem}")
        lines.append(f"{PAD}{model.location} ({model.place})")
        return lines
    if model.problem:
        facts = [size_words(model.size), model.problem] if model.size is not None else [model.problem]
    else:
        template = "yes" if model.chat_template else "no"
        facts = [size_words(model.size), f"chat template: {template}"]
        if verdict:
            facts.append(f"self-test: {verdict}")
    lines.append(PAD + " · ".join(facts))
    lines.append(f"{PAD}{_tilde(model.location)} ({model.place})" if model.location else
                 f"{PAD}(packaged in parts; the first job assembles it)")
    return lines


def format_models(found: Any, verdicts: list[str | None], current: Any) -> str:
    out = [f"Models on this machine ({found.seconds:.1f} s):", ""]
    for model, verdict in zip(found.models, verdicts):
        out += model_lines(model, verdict, model is current)
    out.append("")
    if current is None:
        out.append("* none: the current model setting is not among these.")
    else:
        out.append("* the model the next job uses.")
    out.append("Looked in:")
    width = max(len(p.label) for p in found.places) + 2
    for p in found.places:
        where = _tilde(str(p.path))
        out.append(f"  {p.label:<{width}}{'' if where == p.label else where + ' '}{'' if p.exists else '(absent)'}".rstrip())
    if found.servers:
        answered = {m.location for m in found.models if m.kind == "server" and m.usable}
        hosts = ", ".join(u.removeprefix("http://").removesuffix("/v1") for u in found.servers)
        out.append(f"Asked GET /v1/models of {hosts}: {len(answered) or 'none'} answered.")
    out += [f"Note: {n}" for n in found.notes]
    out.append("Use one: --model PATH, or --endpoint URL --model NAME; in the workbench, ctrl+o and Enter on it.")
    return "\n".join(out)


def cmd_models(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.llm.cache import default_cache
    from ctxfst_tui.core.llm.discovery import discover, kept_verdict

    settings, config = _current_settings()
    options = dict(config.discovery)
    if args.no_ports:
        options["ports"] = False
    found = discover(current=settings, **options)
    current = found.current(settings)
    hashes = default_cache()
    verdicts = [kept_verdict(m, hash_cache=hashes) for m in found.models]
    if args.json:
        from dataclasses import asdict

        data = {
            "current": {k: v for k, v in asdict(settings).items() if v not in (None, "")},
            "models": [dict(m.to_json(), self_test=v, current=m is current) for m, v in zip(found.models, verdicts)],
            "places": [{"label": p.label, "path": str(p.path), "exists": p.exists} for p in found.places],
            "servers": found.servers,
            "notes": found.notes,
            "seconds": round(found.seconds, 3),
        }
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        print(format_models(found, verdicts, current))
    return 0
