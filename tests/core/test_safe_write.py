"""Writes that never destroy (issue 12, item 9): lost updates, links, owners, read-only and
non-regular targets, all-or-nothing multi-file saves, and the modes of new files.

Real files throughout: a second user (``nobody``) as root, a real 64 KiB tmpfs for the full disk,
real FIFOs and device nodes, the CLI in a child process where a wrong write could block.
"""
from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ctxfst_tui.cli import main
from ctxfst_tui.core import safe_write
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.workspace.workspace import Workspace
from ctxfst_tui.core.workspace.entity_ops import merge_entities
from ctxfst_tui.core.safe_write import (
    ABSENT,
    WriteError,
    WritePlan,
    write_file,
    write_files,
)

ROOT = Path(__file__).resolve().parents[2]
IS_ROOT = os.geteuid() == 0
NOBODY = 65534


def doc_text(title: str = "A", entity: str = "entity:js", name: str = "JS", context: str = "first") -> str:
    return (
        f"---\ntitle: {title}\nentities:\n  - id: {entity}\n    name: {name}\n    type: skill\n"
        f"chunks:\n  - id: {title.lower()}:one\n    context: {context}\n    entities: [{entity}]\n---\n\n"
        f'<Chunk id="{title.lower()}:one">\nSome text about {name}.\n</Chunk>\n'
    )


def make_doc(path: Path, **kw) -> Path:
    path.write_text(doc_text(**kw), encoding="utf-8")
    return path


def leftovers(folder: Path) -> list[str]:
    """Temp files a write left behind (there must be none)."""
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.fixture
def request_cleanup():
    undo: list = []
    yield undo
    for step in undo:
        step()


@contextlib.contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


# ---------------------------------------------------------------- lost updates


def test_save_refuses_a_file_changed_on_disk_since_it_was_read(tmp_path):
    target = make_doc(tmp_path / "a.md")
    doc = Document.load(target)
    doc.set_field("chunks", 0, "context", "my edit")
    theirs = doc_text(context="another program's edit").encode()
    target.write_bytes(theirs)  # another program, between our read and our save
    with pytest.raises(WriteError) as info:
        doc.save()
    assert str(info.value) == f"{target}: changed on disk since it was read; not written"
    assert info.value.kind == "changed"
    assert target.read_bytes() == theirs  # the other program's bytes survive
    assert doc.dirty  # our edit is still held, unsaved
    assert leftovers(tmp_path) == []
    # Once the user has seen the other version (re-read), a save goes through.
    fresh = Document.load(target)
    fresh.set_field("chunks", 0, "context", "merged by hand")
    assert fresh.save() and b"merged by hand" in target.read_bytes()


def test_workspace_merge_is_refused_whole_when_one_file_changed_on_disk(tmp_path):
    a = make_doc(tmp_path / "a.md", title="A", entity="entity:js", name="JS")
    b = make_doc(tmp_path / "b.md", title="B", entity="entity:javascript", name="JavaScript")
    a_before = a.read_bytes()
    ws = Workspace.load(tmp_path)
    merge_entities(ws, "entity:javascript", ["entity:js"])
    assert len(ws.dirty) == 2
    theirs = b.read_bytes().replace(b"Some text", b"Their text")
    b.write_bytes(theirs)
    with pytest.raises(WriteError) as info:
        ws.save()
    message = str(info.value)
    assert f"{a}: not written" in message and f"{b}: error (changed on disk since it was read; not written)" in message
    assert message.startswith("nothing was replaced")
    assert a.read_bytes() == a_before and b.read_bytes() == theirs
    assert leftovers(tmp_path) == []


def test_diagnose_apply_refuses_a_lost_update_in_a_real_cli_process(tmp_path):
    """The CLI reads, fixes, then saves; a file rewritten in between (by the child itself, just
    before its save: the window another program would use) is not overwritten."""
    import shutil

    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "sample_docs", docs)
    before = {p: p.read_bytes() for p in docs.rglob("*.md")}
    code = (
        "import sys, pathlib\n"
        "from ctxfst_tui.core.workspace import workspace as entities\n"
        "real = entities.Workspace.save\n"
        "def save(self, *a, **k):\n"
        "    victim = self.dirty[0].path\n"
        "    victim.write_text('rewritten by someone else\\n')\n"
        "    print(victim)\n"
        "    return real(self, *a, **k)\n"
        "entities.Workspace.save = save\n"
        "from ctxfst_tui.cli import main\n"
        "sys.exit(main(['diagnose', sys.argv[1], '--apply']))\n"
    )
    p = subprocess.run([sys.executable, "-c", code, str(docs)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    victim = Path(p.stdout.strip().splitlines()[-1])
    assert p.returncode == 2, p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert str(victim) in last and "changed on disk since it was read; not written" in last
    assert victim.read_text() == "rewritten by someone else\n"
    for path, data in before.items():  # all or nothing: no other file was written either
        if path != victim:
            assert path.read_bytes() == data, path


# ---------------------------------------------------------------- exclusive create (convert)


def test_convert_without_force_never_replaces_a_file_created_after_its_check(tmp_path, monkeypatch, capsys):
    note = tmp_path / "note.md"
    note.write_text("# Title\n\nA paragraph of text.\n\n## Part\n\nMore text here.\n", encoding="utf-8")
    target = tmp_path / "note.ctxfst.md"
    from ctxfst_tui.core.chunking import convert

    real = convert.convert_checked

    def convert_then_race(*a, **k):
        out = real(*a, **k)
        target.write_text("created by another program\n")  # after the CLI's existence check
        return out

    monkeypatch.setattr(convert, "convert_checked", convert_then_race)
    assert main(["convert", str(note)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"ctxfst-tui: {target}: cannot write: already exists; not replaced"]
    assert target.read_text() == "created by another program\n"
    assert leftovers(tmp_path) == []


def test_exclusive_create_loses_to_a_file_created_between_temp_and_link(tmp_path, monkeypatch):
    """The last window (temp written, about to be linked): the hard link fails, nothing replaced."""
    target = tmp_path / "out.md"
    real = safe_write._write_temp

    def temp_then_race(prep):
        tmp = real(prep)
        target.write_text("theirs\n")
        return tmp

    monkeypatch.setattr(safe_write, "_write_temp", temp_then_race)
    with pytest.raises(WriteError) as info:
        write_file(target, b"ours\n", expected=ABSENT)
    assert info.value.kind in ("exists", "changed")
    assert target.read_text() == "theirs\n"
    assert leftovers(tmp_path) == []


def test_convert_force_replaces_and_plain_convert_creates(tmp_path, capsys):
    note = tmp_path / "note.md"
    note.write_text("# Title\n\nText.\n", encoding="utf-8")
    with umask(0o022):
        assert main(["convert", str(note)]) == 0
    target = tmp_path / "note.ctxfst.md"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert main(["convert", str(note)]) == 1
    assert "already exists" in capsys.readouterr().err
    target.write_text("old\n")
    assert main(["convert", str(note), "--force"]) == 0
    assert target.read_text().startswith("---")


# ---------------------------------------------------------------- links


def test_save_writes_through_a_symlink_and_the_link_stays_a_link(tmp_path):
    real = make_doc(tmp_path / "real.md")
    link = tmp_path / "link.md"
    link.symlink_to("real.md")
    doc = Document.load(link)
    doc.set_field("chunks", 0, "context", "through the link")
    assert doc.save()
    assert link.is_symlink() and os.readlink(link) == "real.md"
    assert b"through the link" in real.read_bytes()
    assert link.read_bytes() == real.read_bytes()  # one file, not two diverging copies
    assert leftovers(tmp_path) == []
    # A document still holding the old text of real.md is now stale: its save is refused.
    stale = Document.from_text(doc_text(), real)
    stale.set_field("chunks", 0, "context", "stale edit")
    with pytest.raises(WriteError, match="changed on disk since it was read"):
        stale.save()
    assert b"through the link" in real.read_bytes()


def test_workspace_holding_a_file_and_a_link_to_it_writes_the_file_once(tmp_path):
    make_doc(tmp_path / "a.md", title="A", entity="entity:js", name="JS")
    make_doc(tmp_path / "b.md", title="B", entity="entity:javascript", name="JavaScript")
    (tmp_path / "c-link.md").symlink_to("a.md")
    ws = Workspace.load(tmp_path)
    if not any(d.path.name == "c-link.md" for d in ws.docs):
        pytest.skip("the folder scan does not list symlinks")
    merge_entities(ws, "entity:javascript", ["entity:js"])
    ws.save()
    a = (tmp_path / "a.md").read_text()
    assert "entity:js\n" not in a and "entity:javascript" in a
    assert (tmp_path / "c-link.md").is_symlink()
    assert leftovers(tmp_path) == []


def test_two_different_texts_for_one_file_are_refused(tmp_path):
    target = tmp_path / "a.md"
    target.write_text("old\n")
    (tmp_path / "link.md").symlink_to("a.md")
    with pytest.raises(WriteError, match="the same file as"):
        write_files([WritePlan(target, b"one\n"), WritePlan(tmp_path / "link.md", b"two\n")])
    assert target.read_text() == "old\n"
    assert leftovers(tmp_path) == []


def test_a_symlink_loop_is_an_error_not_a_write(tmp_path):
    loop = tmp_path / "loop.md"
    loop.symlink_to("loop.md")
    with pytest.raises(WriteError, match="symlink loop"):
        write_file(loop, b"x")
    assert loop.is_symlink()


def test_hard_links_are_kept_by_writing_in_place(tmp_path):
    """Decision: a file with other names is rewritten in place (same inode), after a full temp
    copy proved the space is there; every name sees the new text."""
    a = make_doc(tmp_path / "a.md")
    b = tmp_path / "b.md"
    os.link(a, b)
    inode = a.stat().st_ino
    doc = Document.load(a)
    doc.set_field("chunks", 0, "context", "seen by both names")
    assert doc.save()
    assert a.stat().st_ino == inode == b.stat().st_ino and a.stat().st_nlink == 2
    assert b"seen by both names" in b.read_bytes()
    assert a.read_bytes() == doc.encoded()
    assert leftovers(tmp_path) == []
    # shorter text: the file is truncated to the new length
    doc.replace_text("short\n")
    doc.save()
    assert b.read_bytes() == b"short\n"


# ---------------------------------------------------------------- owner, mode, read-only


@pytest.mark.skipif(not IS_ROOT, reason="chown to another user needs root")
def test_owner_and_group_are_kept(tmp_path):
    target = make_doc(tmp_path / "a.md")
    os.chown(target, NOBODY, NOBODY)
    os.chmod(target, 0o640)
    doc = Document.load(target)
    doc.set_field("chunks", 0, "context", "edited by root")
    assert doc.save()
    st = target.stat()
    assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY)  # nobody:nogroup, not root:root
    assert stat.S_IMODE(st.st_mode) == 0o640
    assert b"edited by root" in target.read_bytes()


@pytest.mark.skipif(not IS_ROOT, reason="needs root to set up a second user")
def test_a_user_who_cannot_chown_writes_in_place_and_the_owner_stays(request_cleanup):
    """nobody saves a group-writable file owned by root in a folder nobody owns: a rename would
    make nobody the owner, so the file is written in place and stays root's."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="safe-write-nobody-"))  # pytest's tmp_path is 0700: nobody cannot enter
    request_cleanup.append(lambda: shutil.rmtree(folder, ignore_errors=True))
    os.chown(folder, NOBODY, NOBODY)
    target = folder / "a.md"
    target.write_bytes(b"old\n")
    os.chmod(target, 0o666)
    code = (
        "import os, sys\n"
        "from ctxfst_tui.core.safe_write import write_file\n"  # imported as root: nobody may not read the stdlib
        "os.setgroups([]); os.setgid(65534); os.setuid(65534)\n"
        "write_file(sys.argv[1], b'new from nobody\\n', expected=b'old\\n')\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    st = target.stat()
    assert (st.st_uid, st.st_gid) == (0, 0) and target.read_bytes() == b"new from nobody\n"
    assert leftovers(folder) == []


def test_read_only_files_are_refused_unless_forced(tmp_path):
    target = make_doc(tmp_path / "a.md")
    os.chmod(target, 0o444)
    before = target.read_bytes()
    doc = Document.load(target)
    doc.set_field("chunks", 0, "context", "edit")
    with pytest.raises(WriteError) as info:
        doc.save()
    assert str(info.value) == f"{target}: read-only (mode 0444); not written"
    assert target.read_bytes() == before and doc.dirty
    assert doc.save(force=True)
    assert b"context: edit" in target.read_bytes()
    assert stat.S_IMODE(target.stat().st_mode) == 0o444  # forced, and still read-only
    assert leftovers(tmp_path) == []


def test_a_replaced_file_keeps_its_mode(tmp_path):
    target = tmp_path / "a.json"
    target.write_text("{}\n")
    os.chmod(target, 0o600)
    with umask(0o022):
        write_file(target, b"[]\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and target.read_text() == "[]\n"


# ---------------------------------------------------------------- non-regular targets


def run_cli(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "ctxfst_tui", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def test_output_onto_a_fifo_is_refused_and_the_fifo_stays(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    make_doc(docs / "a.md")
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    # A child process with a timeout: a writer that opened the FIFO would block, never return.
    p = run_cli("export", docs, "-o", fifo)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines()[-1] == f"ctxfst-tui: {fifo}: cannot write: not a regular file (a named pipe); not replaced"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert leftovers(tmp_path) == []
    # and no process opened it: a non-blocking open for reading sees no writer ever came
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert os.read(fd, 10) == b""
    finally:
        os.close(fd)


def test_output_onto_a_device_node_or_folder_is_refused(tmp_path):
    node = tmp_path / "null-like"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # the same device as /dev/null
    except (PermissionError, OSError):
        node = None
    if node is not None:
        with pytest.raises(WriteError, match=r"not a regular file \(a character device\); not replaced"):
            write_file(node, b"x")
        assert stat.S_ISCHR(os.lstat(node).st_mode)
    folder = tmp_path / "dir.md"
    folder.mkdir()
    with pytest.raises(WriteError, match=r"not a regular file \(a folder\)"):
        write_file(folder, b"x")
    assert folder.is_dir() and leftovers(tmp_path) == []


def test_a_symlink_to_a_fifo_is_refused_too(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "link.json").symlink_to("pipe")
    with pytest.raises(WriteError, match="named pipe"):
        write_file(tmp_path / "link.json", b"x")
    assert (tmp_path / "link.json").is_symlink() and stat.S_ISFIFO(os.lstat(fifo).st_mode)


# ---------------------------------------------------------------- all or nothing on a full disk


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str = "64k"):
    where.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


@pytest.mark.skipif(not IS_ROOT, reason="mounting a tmpfs needs root")
def test_full_disk_multi_file_save_replaces_neither_file_and_names_both(tmp_path):
    with small_tmpfs(tmp_path / "disk") as disk:
        a = make_doc(disk / "a.md", title="A")
        b = make_doc(disk / "b.md", title="B")
        a_before, b_before = a.read_bytes(), b.read_bytes()
        da, db = Document.load(a), Document.load(b)
        da.set_field("chunks", 0, "context", "a small edit")
        db.set_field("chunks", 0, "context", "x" * 80_000)  # more than the 64 KiB disk holds
        ws = Workspace([da, db], disk)
        with pytest.raises(WriteError) as info:
            ws.save()
        message = str(info.value)
        assert message == (f"nothing was replaced: {a}: not written; "
                           f"{b}: error (No space left on device; not written)")
        assert a.read_bytes() == a_before and b.read_bytes() == b_before
        assert leftovers(disk) == []
        assert da.dirty and db.dirty
        # with room again (a smaller edit) both are written
        db.set_field("chunks", 0, "context", "fits")
        assert sorted(p.name for p in ws.save()) == ["a.md", "b.md"]
        assert b"a small edit" in a.read_bytes() and b"context: fits" in b.read_bytes()


@pytest.mark.skipif(not IS_ROOT, reason="mounting a tmpfs needs root")
def test_full_disk_cli_merge_is_one_line_naming_both_files(tmp_path):
    with small_tmpfs(tmp_path / "disk") as disk:
        a = make_doc(disk / "a.md", title="A", entity="entity:js", name="JS")
        b = make_doc(disk / "b.md", title="B", entity="entity:javascript", name="JavaScript")
        (disk / "filler").write_bytes(b"\0" * (64 * 1024 - 2 * 4096 - 1024))  # nearly full
        before = a.read_bytes(), b.read_bytes()
        p = run_cli("entities", "merge", disk, "--into", "entity:javascript", "entity:js")
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(lines) == 1, p.stderr
        assert str(a) in lines[0] and str(b) in lines[0] and "nothing was replaced" in lines[0]
        assert (a.read_bytes(), b.read_bytes()) == before
        assert leftovers(disk) == []


# ---------------------------------------------------------------- new files' modes


def test_new_files_get_the_mode_the_umask_gives(tmp_path, capsys):
    from ctxfst_tui.config import write_default_config
    from ctxfst_tui.core.summary.store import save_store

    docs = tmp_path / "docs"
    docs.mkdir()
    make_doc(docs / "a.md")
    with umask(0o022):
        assert main(["export", str(docs), "-o", str(tmp_path / "chunks.json")]) == 0
        assert main(["profiles", str(tmp_path / "chunks.json"), "-o", str(tmp_path / "profiles.json")]) == 0
        assert main(["graph", str(tmp_path / "chunks.json"), "-o", str(tmp_path / "graph.json"), "--mode", "metadata"]) == 0
        assert main(["graph", str(tmp_path / "chunks.json"), "-o", str(tmp_path / "graph.graphml"), "--mode", "metadata",
                     "--format", "graphml"]) == 0
        assert write_default_config(tmp_path / "cfg" / "config.toml")
        save_store(tmp_path / "novel.summary.json", {"format": "x"})
        write_file(tmp_path / "plain.txt", b"x")
    for name in ("chunks.json", "profiles.json", "graph.json", "graph.graphml", "cfg/config.toml", "novel.summary.json", "plain.txt"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644, name
    assert json.loads((tmp_path / "novel.summary.json").read_text()) == {"format": "x"}
    assert (tmp_path / "graph.graphml").read_text().startswith("<?xml")
    with umask(0o077):
        write_file(tmp_path / "private.txt", b"x")
    assert stat.S_IMODE((tmp_path / "private.txt").stat().st_mode) == 0o600


# ---------------------------------------------------------------- no edit, no write


def test_a_save_without_edits_writes_nothing_and_renames_nothing(tmp_path):
    target = make_doc(tmp_path / "a.md")
    before = target.read_bytes()
    st = target.stat()
    doc = Document.load(target)
    assert doc.save() is False
    ws = Workspace([doc], tmp_path)
    assert ws.save() == []
    after = target.stat()
    assert target.read_bytes() == before
    assert (after.st_ino, after.st_mtime_ns, after.st_ctime_ns) == (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
    assert leftovers(tmp_path) == []


def test_expected_may_be_a_sha256(tmp_path):
    import hashlib

    target = tmp_path / "a.txt"
    target.write_bytes(b"one\n")
    write_file(target, b"two\n", expected=hashlib.sha256(b"one\n").hexdigest())
    with pytest.raises(WriteError, match="changed on disk"):
        write_file(target, b"three\n", expected=hashlib.sha256(b"one\n").hexdigest())
    assert target.read_bytes() == b"two\n"
