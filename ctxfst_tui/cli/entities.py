"""The entity commands: ``entities list|suggest|merge|extract``, and ``profiles`` / ``graph`` built
from an exported chunks.json (the reference's outputs, byte for byte)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ctxfst_tui.cli.common import CliError, editable_document, emit_output, load_workspace, read_json, save_workspace
from ctxfst_tui.cli.model_options import make_backend_from_args
from ctxfst_tui.core.text.plural import count


def cmd_profiles(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.entities.profiles import build_entity_profiles, dumps

    for option, value in (("--max-contexts", args.max_contexts), ("--top-keywords", args.top_keywords)):
        if value < 1:  # exit 1 as the reference, before reading anything
            raise CliError(f"{option} must be >= 1 (got {value})", 1)
    data = read_json(args.input)
    try:
        out = build_entity_profiles(data, args.input, max_contexts=args.max_contexts, top_keywords=args.top_keywords)
    except ValueError as exc:
        raise CliError(f"{args.input}: {exc}", 1) from None
    emit_output(args.output, dumps(out))
    print(f"wrote {args.output}" if args.output != "-" else "wrote to stdout", file=sys.stderr)
    return 0


def cmd_graph(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.entities import graph

    if args.top_k is not None and args.top_k < 1:  # exit 1 as the reference, before reading anything
        raise CliError(f"--top-k must be >= 1 (got {args.top_k})", 1)
    if args.min_score is not None and not 0.0 <= args.min_score <= 1.0:
        raise CliError(f"--min-score must be between 0.0 and 1.0 (got {args.min_score})", 1)
    data = read_json(args.input)
    extra = read_json(args.extra_edges) if args.extra_edges else None
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
        emit_output(args.output, buffer.getvalue())
    else:
        emit_output(args.output, graph.dumps(out))
    print(f"wrote {args.output}" if args.output != "-" else "wrote to stdout", file=sys.stderr)
    return 0


def cmd_entities_list(args: argparse.Namespace) -> int:
    rows = load_workspace(args.path).entity_table()
    if args.json:
        print(json.dumps({"entities": [r.to_json() for r in rows]}, ensure_ascii=False, indent=2))
        return 0
    print(f"{'id':32} {'name':24} {'type':10} {'chunks':>6}  aliases / documents")
    for r in rows:
        where = ", ".join(Path(d).name for d in r.declared_in) or "(declared nowhere)"
        aliases = ", ".join(r.aliases)
        print(f"{r.id:32} {str(r.name or ''):24} {str(r.type or ''):10} {r.chunks:>6}  {aliases + ' · ' if aliases else ''}{where}")
    print(count(len(rows), "entity"))
    return 0


def cmd_entities_suggest(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.entities.aliases import clusters_to_json, suggest_clusters

    ws = load_workspace(args.path)
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
    print(f"{count(len(clusters), 'cluster')}: {sure} sure, {len(clusters) - sure} to review")
    return 0


def cmd_entities_merge(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.workspace.entity_ops import EntityOpError, merge_entities

    ws = load_workspace(args.path)
    try:
        result = merge_entities(ws, args.into, args.merged, dry_run=args.dry_run)
    except EntityOpError as exc:
        raise CliError(str(exc), 1) from None
    if args.dry_run:
        print(result, end="" if str(result).endswith("\n") else "\n")
        return 0
    saved = save_workspace(ws)
    print(f"merged {', '.join(args.merged)} into {args.into}; {count(len(saved), 'file')} written", file=sys.stderr)
    return 0


def format_proposals(props) -> str:
    """``entities extract`` without ``--json``: one line per proposed entity, match, link and model
    error, then the summary."""
    lines = []
    for p in props.entities:
        lines.append(f"  + {p.id}  {p.name} ({p.type})" + (f"  aliases: {', '.join(p.aliases)}" if p.aliases else "")
                     + f"  [{', '.join(p.sources)}]  chunks: {', '.join(p.chunks) or '-'}")
    for p in props.matched:
        lines.append(f"  = {p.id}  (existing)  chunks: {', '.join(p.chunks)}")
    for link in props.links:
        lines.append(f"  link {link.chunk_id} -> {link.entity_id}  ('{link.evidence}')")
    for e in props.model_errors:
        lines.append(f"  model error: {e}")
    lines.append(props.summary())
    return "\n".join(lines)


def cmd_entities_extract(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.entities.extract import apply_proposals, extract_entities
    from ctxfst_tui.core.llm import ModelError
    from ctxfst_tui.core.llm.probe import preflight

    doc = editable_document(args.path)
    try:
        backend = None if args.no_model else make_backend_from_args(args)
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
