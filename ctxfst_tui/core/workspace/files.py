"""Which paths may be read as files: the one place that keeps pipes, sockets and loops out.

Opening a named pipe for reading blocks until a writer comes (forever, in practice); a device
node may do anything; a symlink loop or a folder named ``x.md`` cannot be read at all. Every
command and the workbench ask ``regular_file(path)`` before reading and skip what is not a
regular file with the reason it gives ("a named pipe"), and read through ``read_regular``, which
opens without blocking and checks the opened file again (``fstat``) so a file swapped for a pipe
between the check and the open is still refused.
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class NotRegularFile(OSError):
    """``path`` is not a regular file (or cannot be reached); ``reason`` says what it is."""

    def __init__(self, path: str | os.PathLike, reason: str):
        super().__init__(errno.EINVAL, reason, str(path))
        self.path = Path(path)
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def kind_of(mode: int) -> str | None:
    """None for a regular file, else what the mode says it is ("a named pipe")."""
    if stat.S_ISREG(mode):
        return None
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def regular_file(path: str | os.PathLike) -> str | None:
    """None if ``path`` is (or links to) a regular file; else why it is not, e.g. "a named pipe",
    "a symlink loop", "a dangling symlink", "a folder", "no such file". Never opens anything."""
    try:
        link = os.lstat(path)
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return _why(exc)
    if not stat.S_ISLNK(link.st_mode):
        return kind_of(link.st_mode)
    try:
        target = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symlink loop"
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return "a dangling symlink"
        return _why(exc)
    kind = kind_of(target.st_mode)
    return f"a symlink to {kind}" if kind is not None else None


def _why(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "a symlink loop"
    return f"cannot be read ({exc.strerror or exc})"


def read_regular(path: str | os.PathLike) -> bytes:
    """The bytes of the regular file ``path``; ``NotRegularFile`` for anything else, ``OSError``
    when it cannot be read (see ``read_regular_stat``)."""
    return read_regular_stat(path)[0]


def read_regular_stat(path: str | os.PathLike) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file ``path`` and the ``fstat`` of the file they were read from.

    The open is non-blocking (a pipe swapped in after the check opens at once instead of waiting
    for a writer) and the opened file is checked again with ``fstat`` before a byte is read."""
    why = regular_file(path)
    if why is not None:
        raise NotRegularFile(path, why)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegularFile(path, "a symlink loop") from None
        raise
    try:
        st = os.fstat(fd)
        kind = kind_of(st.st_mode)
        if kind is not None:
            raise NotRegularFile(path, kind)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=True) as fh:
            fd = -1
            return fh.read(), st
    finally:
        if fd >= 0:
            os.close(fd)


def read_regular_text(path: str | os.PathLike, encoding: str = "utf-8") -> str:
    """``read_regular`` decoded (``UnicodeDecodeError`` when it is not ``encoding``)."""
    return read_regular(path).decode(encoding)


def safe_resolve(path: str | os.PathLike) -> Path:
    """``Path.resolve()`` that never raises: a symlink loop (RuntimeError on Python 3.11, OSError
    later) or an unreadable parent gives the absolute path with ``..`` collapsed instead."""
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError, ValueError):
        return Path(os.path.normpath(os.path.abspath(path)))


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """True when both paths resolve to the same path (links followed); never raises."""
    return safe_resolve(a) == safe_resolve(b)
