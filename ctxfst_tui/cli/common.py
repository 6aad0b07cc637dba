"""What every subcommand shares: :class:`CliError`, the input checks and the output writers.

An expected failure is a :class:`CliError`: ``main`` prints it as one line on stderr, naming the
file (and line), and exits with its status. Inputs are checked before they are read, so a named
pipe or a device never hangs a command; outputs go through ``core.safe_write``.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


class CliError(Exception):
    """A failure to report as one line, with an exit status."""

    def __init__(self, message: str, status: int = 2):
        super().__init__(message)
        self.status = status


# ---------------------------------------------------------------- inputs

def check_path(path: str) -> None:
    """A one-line error when ``path`` is neither a folder nor a regular file (a pipe would hang)."""
    from ctxfst_tui.core.workspace.files import regular_file

    if os.path.isdir(path):
        return
    why = regular_file(path)
    if why == "no such file":
        raise CliError(f"{path}: no such file or folder")
    if why is not None:
        raise CliError(f"{path}: {why}, not read", 1)


def check_file(path: str) -> None:
    """A one-line error unless ``path`` is a regular file: "no such file", "a named pipe, not read"…"""
    from ctxfst_tui.core.workspace.files import regular_file

    why = regular_file(path)
    if why == "no such file":
        raise CliError(f"{path}: no such file")
    if why is not None:
        raise CliError(f"{path}: {why}, not read", 1)


def warn_skipped(skipped: list) -> None:
    for s in skipped:
        print(f"warning: {s.one_line()}", file=sys.stderr)


def load_documents(path: str, skipped: list | None = None) -> list:
    """The documents of a file or folder; special files in a folder are named on stderr, skipped
    (and added to ``skipped``)."""
    from ctxfst_tui.core.format.document import Document
    from ctxfst_tui.core.workspace.scan import scan_documents

    check_path(path)
    scan = scan_documents(path, (".md",)) if os.path.isdir(path) else None
    files = scan.documents if scan is not None else [Path(path)]
    if scan is not None:
        warn_skipped(scan.skipped)
        if skipped is not None:
            skipped.extend(scan.skipped)
    return [Document.load(f) for f in files]


def load_workspace(path: str):
    """The documents of a file or folder as one :class:`Workspace` (entity commands, fixes)."""
    from ctxfst_tui.core.workspace.workspace import Workspace

    return Workspace(load_documents(path), path)


def read_text(path: str) -> str:
    """The decoded text of a file, or a one-line error naming the file and line."""
    from ctxfst_tui.core.format.document import Document

    check_file(path)
    doc = Document.load(path)
    bad = [f for f in doc.load_findings if f.rule.startswith("file-")]
    if bad:
        raise CliError(bad[0].one_line(), 1)
    return doc.text


def read_json(path: str) -> Any:
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


def editable_document(path: str):
    """A CtxFST document to edit, or a one-line error when it cannot be edited safely."""
    from ctxfst_tui.core.format.document import Document

    check_file(path)
    doc = Document.load(path)
    if doc.load_findings:
        raise CliError(doc.load_findings[0].one_line(), 1)
    if doc.data is None:
        raise CliError(f"{path}: no CtxFST frontmatter (run 'ctxfst-tui convert' first)", 1)
    return doc


# ---------------------------------------------------------------- outputs

def write_output(path: str | Path, text: str | bytes, *, exclusive: bool = False) -> None:
    """Write an output file through ``core.safe_write`` (never onto a pipe or device, never over a
    read-only file; ``exclusive``: only if no file has that name, even one created a moment ago)."""
    from ctxfst_tui.core.safe_write import ABSENT, write_file

    data = text.encode("utf-8") if isinstance(text, str) else text
    try:
        write_file(Path(path), data, expected=ABSENT if exclusive else None)
    except OSError as exc:
        exists = getattr(exc, "kind", "") == "exists"
        raise CliError(f"{path}: cannot write: {exc.strerror or exc}", 1 if exists else 2) from None


def output_name(path: str) -> str:
    return "stdout" if str(path) == "-" else str(path)


def emit_output(path: str, data: str | bytes) -> None:
    """export / profiles / graph output: a file written through :func:`write_output` (safe_write),
    or stdout for ``-``. The bytes are the reference's either way (no trailing newline); only on
    a terminal is a final newline added, so the shell prompt starts on its own line."""
    if str(path) != "-":
        write_output(path, data)
        return
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if sys.stdout.isatty() and not raw.endswith(b"\n"):
        raw += b"\n"
    sys.stdout.flush()
    sys.stdout.buffer.write(raw)
    sys.stdout.buffer.flush()


def save_workspace(ws) -> list[Path]:
    """Write the workspace's edited documents; a failed write is one line (exit 2), never a traceback."""
    try:
        return ws.save()
    except OSError as exc:
        raise CliError(f"cannot save: {exc}") from None
