"""Writes that never destroy: the one way this project replaces or creates a file.

Documents, outputs of the CLI, the config, the summary store and the journal all go through
here (it sits at the bottom of ``core`` so that ``format`` and ``workspace`` can both use it).

Every write goes through a temp file in the target's own folder (created with ``O_EXCL``,
written, ``fsync``-ed) and then one rename, so a crash or a full disk leaves the old file whole.
On top of that atomicity a write:

* refuses a lost update: with ``expected`` (the bytes read before editing, or their sha256),
  the file on disk is compared right before the rename; if another program changed it, nothing
  is written and the error says "changed on disk since it was read";
* creates exclusively when asked (``expected=ABSENT``): the temp file is hard-linked to the
  target name, which fails if anyone created that name in the meantime — nothing is replaced;
* writes THROUGH a symlink to its target (the link stays a link);
* keeps a hard link and a foreign owner by writing in place: when the file has other names
  (``st_nlink > 1``), or its owner/group cannot be given to a new file (not root), the new bytes
  go over the old ones in the same inode — after the full temp copy proved the space is there,
  and with the old bytes written back if that in-place write fails;
* keeps mode, owner and group of a replaced file (``fchown`` as root, then ``fchmod``);
  a new file gets the mode the umask gives (0644 under umask 022), not ``mkstemp``'s 0600,
  unless the caller asks for a private one (``new_mode=0o600``: the journal of unsaved edits);
* refuses a read-only file (no write bit, or no write access) unless ``force``;
* never opens for writing nor replaces anything but a regular file: a FIFO, device node, socket
  or folder at the target is an error, and FIFOs are only ever ``stat``-ed.

``write_files`` is all-or-nothing over several files: every temp file is written and synced
first, every lost-update check is repeated, and only then are they renamed; a failure before
the renames removes the temp files and replaces nothing, and the error names each file and
what happened to it. Errors are ``WriteError`` (an ``OSError``), one line naming the file(s).
"""
from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Union

from ctxfst_tui.core.text.plural import count


class _Absent:
    """The ``expected`` value meaning "the target must not exist" (exclusive create)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()
Expected = Union[bytes, str, _Absent, None]  # bytes read, their sha256 hex, ABSENT, or None (no check)

CHANGED = "changed on disk since it was read"


@dataclass
class Outcome:
    """What happened to one file of a write: ``written``, ``not written`` or ``error``."""

    path: Path
    status: str
    detail: str = ""
    kind: str = ""  # for an error: changed | exists | read-only | not-regular | io

    def line(self) -> str:
        return f"{self.path}: {self.status}" + (f" ({self.detail})" if self.detail else "")


class WriteError(OSError):
    """A write that did not happen (or happened only in part), as one line naming every file."""

    def __init__(self, outcomes: list[Outcome]):
        self.outcomes = outcomes
        failed = [o for o in outcomes if o.status == "error"] or outcomes
        first = failed[0]
        super().__init__(first.detail)
        self.filename = str(first.path)
        self.strerror = first.detail if len(outcomes) == 1 else self._summary()
        self.kind = first.kind

    def _summary(self) -> str:
        written = sum(o.status == "written" for o in self.outcomes)
        head = "nothing was replaced" if not written else f"only {written} of {count(len(self.outcomes), 'file')} written"
        return head + ": " + "; ".join(o.line() for o in self.outcomes)

    def __str__(self) -> str:
        if len(self.outcomes) == 1:
            return f"{self.filename}: {self.strerror}"
        return self.strerror


@dataclass
class WritePlan:
    """One file to write: ``data`` at ``path``, guarded by ``expected`` (see ``Expected``)."""

    path: Path
    data: bytes
    expected: Expected = None
    force: bool = False  # write over a read-only file
    new_mode: int = 0o666  # the mode of a new file, before the umask (0o600: private state)

    def __post_init__(self) -> None:
        self.path = Path(self.path)


@dataclass
class _Prepared:
    plan: WritePlan
    real: Path  # the file itself, symlinks followed
    st: os.stat_result | None  # the target as it was before writing (None: a new file)
    tmp: Path | None = None
    in_place: bool = False
    old: bytes = b""  # its bytes before writing (in-place writes restore them on failure)
    same_as: "_Prepared | None" = None  # another plan naming the same file with the same bytes
    done: bool = False


# ---------------------------------------------------------------- public API


def write_file(path: str | os.PathLike, data: bytes, *, expected: Expected = None, force: bool = False,
               new_mode: int = 0o666, parents: bool = False) -> Path:
    """Write ``data`` at ``path`` (see the module docstring); returns the file written (links followed).

    ``parents``: create the missing folders first (config and state files: their folder may
    not exist yet); documents are never written into a folder that is not there."""
    plan = WritePlan(Path(path), data, expected, force, new_mode)
    if parents:
        plan.path.parent.mkdir(parents=True, exist_ok=True)
    prep = _run([plan])[0]
    return prep.real


def write_text(path: str | os.PathLike, text: str, **kwargs) -> Path:
    return write_file(path, text.encode("utf-8"), **kwargs)


def write_files(plans: Iterable[WritePlan]) -> list[Path]:
    """Write several files all-or-nothing; returns the paths as given. Raises ``WriteError``."""
    plans = list(plans)
    _run(plans)
    return [p.path for p in plans]


# ---------------------------------------------------------------- the protocol


def _run(plans: list[WritePlan]) -> list[_Prepared]:
    preps: list[_Prepared] = []
    try:
        try:
            # 1. every check and every temp file first: nothing on disk is touched yet
            for plan in plans:
                preps.append(_prepare(plan, preps))
            # 2. the lost-update checks again, right before the renames
            for prep in preps:
                if prep.same_as is None:
                    _check(prep, again=True)
        except _Refusal as refusal:
            raise WriteError(_outcomes(plans, refusal)) from None
        # 3. the renames (or in-place writes)
        for prep in preps:
            if prep.same_as is None:
                try:
                    _commit(prep)
                except _Refusal as refusal:
                    done = [p.plan for p in preps if p.done or (p.same_as is not None and p.same_as.done)]
                    raise WriteError(_outcomes(plans, refusal, done)) from None
                prep.done = True
    finally:
        _discard(preps)  # the temp files of whatever was not renamed
    for prep in preps:
        prep.done = True
    _sync_dirs({p.real.parent for p in preps})
    return preps


class _Refusal(Exception):
    def __init__(self, plan: WritePlan, detail: str, kind: str):
        super().__init__(detail)
        self.plan, self.detail, self.kind = plan, detail, kind


def _io(plan: WritePlan, exc: OSError, what: str = "", tail: str = "; not written") -> _Refusal:
    """An OS error as a refusal: "No space left on device; not written"."""
    reason = exc.strerror or str(exc)
    return _Refusal(plan, (what + ": " if what else "") + reason + tail, "io")


def _outcomes(plans: list[WritePlan], failed: _Refusal, done: Iterable[WritePlan] = ()) -> list[Outcome]:
    done_ids = {id(p) for p in done}
    out = []
    for plan in plans:
        if plan is failed.plan:
            out.append(Outcome(plan.path, "error", failed.detail, failed.kind))
        elif id(plan) in done_ids:
            out.append(Outcome(plan.path, "written"))
        else:
            out.append(Outcome(plan.path, "not written"))
    return out


def _resolve(plan: WritePlan) -> Path:
    """The file a write lands in: symlinks followed (a dangling link: the file it names)."""
    path = plan.path
    try:
        is_link = stat.S_ISLNK(os.lstat(path).st_mode)
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise _io(plan, exc) from None
    if not is_link:
        return path
    real = Path(os.path.realpath(path))
    try:
        if stat.S_ISLNK(os.lstat(real).st_mode):
            raise _Refusal(plan, "a symlink loop; not written", "not-regular")
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise _io(plan, exc) from None
    return real


def _kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a regular file"


def _stat(plan: WritePlan, real: Path) -> os.stat_result | None:
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _io(plan, exc) from None
    if not stat.S_ISREG(st.st_mode):
        raise _Refusal(plan, f"not a regular file ({_kind_of(st.st_mode)}); not replaced", "not-regular")
    return st


def _read_current(plan: WritePlan, real: Path) -> bytes:
    """The file's bytes now — opened non-blocking and only once ``fstat`` says it is a regular file."""
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _Refusal(plan, CHANGED + " (it became a symlink); not written", "changed") from None
        raise _io(plan, exc, "cannot read it to compare") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _Refusal(plan, f"not a regular file ({_kind_of(st.st_mode)}); not replaced", "not-regular")
        parts = []
        while True:
            block = os.read(fd, 1 << 20)
            if not block:
                break
            parts.append(block)
        return b"".join(parts)
    except OSError as exc:
        raise _io(plan, exc, "cannot read it to compare") from None
    finally:
        os.close(fd)


def _matches(expected: bytes | str, current: bytes) -> bool:
    if isinstance(expected, str):
        return hashlib.sha256(current).hexdigest() == expected.lower()
    return current == expected


def _check(prep: _Prepared, again: bool = False) -> None:
    """The target is still what the plan expects (run when preparing and right before the rename)."""
    plan = prep.plan
    st = _stat(plan, prep.real)
    if st is None:
        if prep.st is not None and again and (plan.expected is not None or prep.in_place):
            raise _Refusal(plan, "deleted on disk since it was read; not written", "changed")
        return
    if plan.expected is ABSENT:
        raise _Refusal(plan, "already exists; not replaced", "exists")
    if prep.st is None:
        if again and plan.expected is not None:
            raise _Refusal(plan, "created on disk by another program since it was read; not replaced", "changed")
        return
    if again and (st.st_dev, st.st_ino) != (prep.st.st_dev, prep.st.st_ino) and plan.expected is not None:
        raise _Refusal(plan, CHANGED + " (replaced by another file); not written", "changed")
    if isinstance(plan.expected, (bytes, str)) or prep.in_place:
        current = _read_current(plan, prep.real)
        if isinstance(plan.expected, (bytes, str)) and not _matches(plan.expected, current):
            raise _Refusal(plan, CHANGED + "; not written", "changed")
        prep.old = current


def _read_only(st: os.stat_result, real: Path) -> bool:
    return not (st.st_mode & 0o222) or not os.access(real, os.W_OK)


def _identity(real: Path, st: os.stat_result | None) -> tuple:
    return ("inode", st.st_dev, st.st_ino) if st is not None else ("path", os.path.abspath(real))


def _prepare(plan: WritePlan, earlier: list[_Prepared]) -> _Prepared:
    real = _resolve(plan)
    st = _stat(plan, real)
    prep = _Prepared(plan, real, st)
    for other in earlier:  # two names of one file (a link and its target, two hard links)
        if _identity(other.real, other.st) == _identity(real, st):
            if other.plan.data != plan.data:
                raise _Refusal(plan, f"the same file as {other.plan.path}, with different content; not written", "io")
            prep.same_as = other
            return prep
    if st is not None:
        if plan.expected is ABSENT:
            raise _Refusal(plan, "already exists; not replaced", "exists")
        if not plan.force and _read_only(st, real):
            raise _Refusal(plan, f"read-only (mode {stat.S_IMODE(st.st_mode):04o}); not written", "read-only")
        prep.in_place = st.st_nlink > 1
    _check(prep)
    prep.tmp = _write_temp(prep)
    return prep


def _write_temp(prep: _Prepared) -> Path:
    """The new bytes in a fresh temp file beside the target, synced; mode/owner copied from the target."""
    plan, real, st = prep.plan, prep.real, prep.st
    folder = real.parent
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _attempt in range(100):
        tmp = folder / f".{real.name}.{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(tmp, flags, plan.new_mode)  # a new file: the umask decides (0644 under 022)
            break
        except FileExistsError:
            continue
        except OSError as exc:
            raise _io(plan, exc) from None
    else:  # pragma: no cover - 100 collisions of 32 random bits
        raise _Refusal(plan, "cannot create a temp file; not written", "io")
    try:
        try:
            if st is not None:
                if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
                    try:
                        os.fchown(fd, st.st_uid, st.st_gid)
                    except PermissionError:
                        prep.in_place = True  # a rename would hand the file to us: write in place instead
                os.fchmod(fd, stat.S_IMODE(st.st_mode))  # after fchown, which clears set-id bits
            view = memoryview(plan.data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        _unlink(tmp)
        raise _io(plan, exc) from None
    if prep.in_place and st is not None and not prep.old:
        prep.old = _read_current(plan, real) if st.st_size else b""
    return tmp


def _commit(prep: _Prepared) -> None:
    plan = prep.plan
    if prep.in_place:
        _write_in_place(prep)  # the temp copy (proof of space) is removed with the others
        return
    try:
        if prep.st is None:
            _link_exclusive(prep)  # the temp name is removed with the others
        else:
            os.replace(prep.tmp, prep.real)
            prep.tmp = None
    except _Refusal:
        raise
    except OSError as exc:
        raise _io(plan, exc) from None


def _link_exclusive(prep: _Prepared) -> None:
    """Give the temp file the target's name only if no file has that name (never replacing one)."""
    assert prep.tmp is not None
    try:
        os.link(prep.tmp, prep.real, follow_symlinks=False)
    except FileExistsError:
        if prep.plan.expected is not None:
            raise _Refusal(prep.plan, "created by another program meanwhile; not replaced", "exists") from None
        _stat(prep.plan, prep.real)  # unguarded: replace what appeared, if it is a regular file
        os.replace(prep.tmp, prep.real)
        prep.tmp = None
        return
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS):
            raise
        _create_exclusive(prep)  # a filesystem without hard links: O_EXCL on the name itself


def _create_exclusive(prep: _Prepared) -> None:
    try:
        fd = os.open(prep.real, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except FileExistsError:
        raise _Refusal(prep.plan, "created by another program meanwhile; not replaced", "exists") from None
    try:
        try:
            _pwrite_all(fd, prep.plan.data)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        _unlink(prep.real)
        raise


def _pwrite_all(fd: int, data: bytes, offset: int = 0) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n


def _write_in_place(prep: _Prepared) -> None:
    """New bytes over the old in the same inode (links and owner kept); the old bytes come back on failure."""
    plan, st = prep.plan, prep.st
    assert st is not None
    try:
        fd = os.open(prep.real, os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise _io(plan, exc) from None
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(now.st_mode):
            raise _Refusal(plan, CHANGED + " (replaced by another file); not written", "changed")
        try:
            _pwrite_all(fd, plan.data)
            os.ftruncate(fd, len(plan.data))
            os.fsync(fd)
        except OSError as exc:
            try:
                _pwrite_all(fd, prep.old)
                os.ftruncate(fd, len(prep.old))
                os.fsync(fd)
                raise _io(plan, exc, tail="; not written (the old content was put back)") from None
            except OSError:
                kept, prep.tmp = prep.tmp, None  # keep the temp copy: the only whole copy of the new text
                raise _io(plan, exc, tail=f"; written only in part (the whole new text is in {kept})") from None
    finally:
        os.close(fd)


def _discard(preps: list[_Prepared]) -> None:
    """Remove the temp files left (after a rename or a link its name is gone or spare)."""
    for prep in preps:
        if prep.tmp is not None:
            _unlink(prep.tmp)


def _unlink(path: Path | None) -> None:
    if path is None:
        return
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        pass


def _sync_dirs(folders: set[Path]) -> None:
    """Make the renames themselves durable (best effort: not every filesystem syncs a folder)."""
    for folder in folders:
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)
