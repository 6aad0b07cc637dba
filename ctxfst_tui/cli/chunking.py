"""``chunk`` and ``convert``: where the structural chunker cuts a note, and the note as a CtxFST document.

Both take the same chunk options (:func:`add_chunk_options`).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ctxfst_tui.cli.common import CliError, read_text, write_output
from ctxfst_tui.core.text.plural import count


def add_chunk_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--unit", choices=("tokens", "chars"), default=None, help="budget unit (default chars)")
    p.add_argument("--size", type=int, default=None, help="chunk budget (default 256 tokens / 1024 chars)")
    p.add_argument("--overlap", type=int, default=None, help="overlap from the previous chunk's last sentences")
    p.add_argument("--min-size", type=int, default=None, help="smaller chunks are absorbed by a neighbour")
    p.add_argument("--encoding", default="cl100k_base", help="tiktoken encoding or OpenAI model name")
    p.add_argument("--mode", choices=("auto", "markdown", "text", "pdf"), default="auto")


def _chunk_options(args: argparse.Namespace):
    from ctxfst_tui.core.chunking.options import ChunkOptions

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


def _chunks_for(path: str, args: argparse.Namespace) -> list:
    from ctxfst_tui.core.chunking.chunker import chunk_text
    from ctxfst_tui.core.chunking.tokens import EncodingUnavailable

    text = read_text(path)
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
    print(f"{count(len(chunks), 'chunk')}, {count(total, 'token')} in all; budget {options.describe()}")
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.chunking.convert import ConvertError, convert_checked, default_target

    source = Path(args.path)
    target = Path(args.output) if args.output else default_target(source)
    if target.exists() and not args.force:
        raise CliError(f"{target}: already exists (use --force to overwrite)", 1)
    text = read_text(args.path)
    chunks = _chunks_for(args.path, args)
    try:
        out = convert_checked(text, chunks, target, title_hint=source.stem)
    except ConvertError as exc:
        raise CliError(f"{args.path}: {exc}", 1) from None
    # Without --force the target is created exclusively: a file that appeared after the check
    # above is never replaced.
    write_output(target, out, exclusive=not args.force)
    n = out.count("<Chunk id=")
    print(f"wrote {target}: {count(n, 'chunk')}; fill in each chunk's context and the entities next", file=sys.stderr)
    return 0
