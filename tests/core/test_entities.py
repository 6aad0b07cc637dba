"""Entity operations across a workspace: minimal diffs, comments kept, undo/redo byte-exact, errors."""
from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.workspace.entity_ops import (
    EntityOpError,
    add_alias,
    delete_entity,
    merge_entities,
    remove_alias,
    rename_entity_id,
    update_entity,
)
from ctxfst_tui.core.workspace.undo import UndoRecord, UndoStack
from ctxfst_tui.core.workspace.workspace import Workspace
from ctxfst_tui.core.format.validate import validate

DOC_A = """\
---
title: "Frontend"
# a top-level comment that must survive
entities:
  - id: entity:javascript   # the canonical one
    name: JavaScript
    type: skill
    aliases: [ECMAScript]
  - id: entity:js
    name: JS
    type: skill
    aliases: [js-lang]
  # a comment between entities
  - id: entity:react
    name: React
    type: framework
  - id: entity:page-loaded
    name: Page Loaded
    type: state
  - id: entity:page-ready
    name: Page Ready
    type: state
    aliases: [ready]
  - id: entity:render
    name: Render
    type: action
    preconditions:
      - "NOT entity:page-ready"
      - "entity:page-loaded"
    postconditions: [entity:page-ready, entity:page-loaded]
chunks:
  - id: skill:react
    tags: [React]
    entities: [entity:react, entity:js, entity:javascript]  # links
    context: "React components written in JS"
    state_refs: [entity:page-loaded, entity:page-ready]
---

<Chunk id="skill:react">
React components.
</Chunk>
"""

DOC_B = """\
---
title: "Backend"
entities:
  - id: entity:node
    name: Node.js
    type: platform
  - id: entity:js
    name: JS
    type: skill
    description: "the language the services are written in"
chunks:
  - id: skill:node
    tags: [Node]
    entities: [entity:node, entity:js]
    context: "Node services written in JS"
---

<Chunk id="skill:node">
Node services.
</Chunk>
"""


def changed(before: str, after: str) -> list[str]:
    return [l for l in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
            if l[:1] in "+-" and not l.startswith(("+++", "---"))]


def diff_changes(diff: str) -> list[str]:
    return [l for l in diff.splitlines() if l[:1] in "+-" and not l.startswith(("+++", "---"))]


@pytest.fixture
def ws_dir(tmp_path: Path) -> Path:
    (tmp_path / "a.md").write_text(DOC_A, encoding="utf-8")
    (tmp_path / "b.md").write_text(DOC_B, encoding="utf-8")
    return tmp_path


@pytest.fixture
def ws(ws_dir: Path) -> Workspace:
    return Workspace.load(ws_dir)


def doc(ws: Workspace, name: str) -> Document:
    return next(d for d in ws.docs if d.path.name == name)


def assert_valid(*docs: Document) -> None:
    for d in docs:
        errors = [f.one_line() for f in validate(d) if f.severity == "error"]
        assert not errors, errors


# ---------------------------------------------------------------- workspace


def test_entity_table(ws, ws_dir):
    rows = {r.id: r for r in ws.entity_table()}
    js = rows["entity:js"]
    assert (js.name, js.type, js.aliases, js.chunks) == ("JS", "skill", ["js-lang"], 2)
    assert js.declared_in == [str(ws_dir / "a.md"), str(ws_dir / "b.md")]
    assert js.linked_from == [str(ws_dir / "a.md"), str(ws_dir / "b.md")]
    assert rows["entity:page-ready"].chunks == 0
    assert rows["entity:page-ready"].linked_from == [str(ws_dir / "a.md")]  # state references count as links
    assert rows["entity:javascript"].to_json()["aliases"] == ["ECMAScript"]
    assert {e["id"] for e in ws.entity_dicts()} == set(rows)


def test_workspace_load_single_file(ws_dir):
    ws = Workspace.load(ws_dir / "b.md")
    assert [d.path.name for d in ws.docs] == ["b.md"]


# ---------------------------------------------------------------- merge


def test_merge_rewrites_both_documents_minimally(ws, ws_dir):
    a_before, b_before = doc(ws, "a.md").text, doc(ws, "b.md").text
    rec = merge_entities(ws, "entity:javascript", ["entity:js"])
    assert isinstance(rec, UndoRecord) and len(rec.changes) == 2
    a, b = doc(ws, "a.md"), doc(ws, "b.md")
    assert changed(a_before, a.text) == [
        "-    aliases: [ECMAScript]",
        "-  - id: entity:js",
        "-    name: JS",
        "-    type: skill",
        "-    aliases: [js-lang]",
        "+    aliases: [ECMAScript, JS, js-lang]",
        "-    entities: [entity:react, entity:js, entity:javascript]  # links",
        "+    entities: [entity:react, entity:javascript]  # links",
    ]
    # b.md declared entity:js but not the target: its entry becomes a copy of the target, in place
    assert changed(b_before, b.text) == [
        "-  - id: entity:js",
        "-    name: JS",
        "+  - id: entity:javascript",
        "+    name: JavaScript",
        "+    aliases: [ECMAScript, JS, js-lang]",
        "-    entities: [entity:node, entity:js]",
        "+    entities: [entity:node, entity:javascript]",
    ]
    assert b.entities[1].data == {"id": "entity:javascript", "name": "JavaScript", "type": "skill",
                                  "description": "the language the services are written in",
                                  "aliases": ["ECMAScript", "JS", "js-lang"]}
    assert_valid(a, b)
    # nothing written yet; then an atomic save of both
    assert (ws_dir / "a.md").read_text() == DOC_A
    assert sorted(p.name for p in ws.save()) == ["a.md", "b.md"]
    assert Document.load(ws_dir / "b.md").text == b.text
    assert ws.save() == []


def test_merge_keeps_comments(ws, ws_dir):
    merge_entities(ws, "entity:javascript", ["entity:js"])
    ws.save()
    text = (ws_dir / "a.md").read_text()
    for comment in ("# a top-level comment that must survive", "# the canonical one",
                    "# a comment between entities", "# links"):
        assert comment in text


def test_merge_states_rewrites_negated_preconditions_and_collapses_duplicates(ws):
    a = doc(ws, "a.md")
    before = a.text
    merge_entities(ws, "entity:page-loaded", ["entity:page-ready"])
    assert changed(before, a.text) == [
        "-  - id: entity:page-ready",
        "-    name: Page Ready",
        "-    type: state",
        "-    aliases: [ready]",
        "+    aliases: [Page Ready, ready]",
        '-      - "NOT entity:page-ready"',
        '+      - "NOT entity:page-loaded"',
        "-    postconditions: [entity:page-ready, entity:page-loaded]",
        "+    postconditions: [entity:page-loaded]",
        "-    state_refs: [entity:page-loaded, entity:page-ready]",
        "+    state_refs: [entity:page-loaded]",
    ]
    render = a.entry_by_id("entities", "entity:render").data
    assert render["preconditions"] == ["NOT entity:page-loaded", "entity:page-loaded"]  # negation kept: not a duplicate
    assert render["postconditions"] == ["entity:page-loaded"]
    assert a.chunks[0].data["state_refs"] == ["entity:page-loaded"]
    assert a.entry_by_id("entities", "entity:page-loaded").data["aliases"] == ["Page Ready", "ready"]
    assert a.entry_by_id("entities", "entity:page-ready") is None
    assert '      - "NOT entity:page-loaded"' in a.text  # the item keeps its quotes
    assert '      - "entity:page-loaded"' in a.text  # the untouched item is left as it was
    assert_valid(a)


def test_merge_aliases_are_deduplicated_case_insensitively(tmp_path):
    (tmp_path / "c.md").write_text(
        "---\nentities:\n  - id: entity:kubernetes\n    name: Kubernetes\n    type: platform\n    aliases: [K8s]\n"
        "  - id: entity:k8s\n    name: k8s\n    type: platform\n    aliases: [KUBERNETES, kube]\n"
        "  - id: entity:kube\n    name: Kube\n    type: platform\n"
        "chunks:\n  - id: a:b\n    entities: [entity:k8s, entity:kube]\n    context: x\n---\n\n<Chunk id=\"a:b\">x</Chunk>\n")
    ws = Workspace.load(tmp_path)
    merge_entities(ws, "entity:kubernetes", ["entity:k8s", "entity:kube", "entity:k8s"])
    d = ws.docs[0]
    assert d.entry_by_id("entities", "entity:kubernetes").data["aliases"] == ["K8s", "kube"]
    assert d.chunks[0].data["entities"] == ["entity:kubernetes"]
    assert [e.id for e in d.entities] == ["entity:kubernetes"]
    assert_valid(d)


def test_merge_appends_target_copy_where_only_links_remain(tmp_path):
    (tmp_path / "a.md").write_text("---\nentities:\n  - id: entity:go\n    name: Go\n    type: skill\nchunks: []\n---\n")
    # c.md links entity:golang without declaring it (already dangling) and declares nothing else
    (tmp_path / "c.md").write_text(
        "---\nentities:\n  - id: entity:golang\n    name: Golang\n    type: skill\n  - id: entity:x\n    name: X\n    type: tool\n"
        "chunks:\n  - id: a:b\n    entities: [entity:x]\n    context: x\n---\n\n<Chunk id=\"a:b\">x</Chunk>\n")
    (tmp_path / "d.md").write_text(
        "---\nentities:\n  - id: entity:x\n    name: X\n    type: tool\n"
        "chunks:\n  - id: a:c\n    entities: [entity:x, entity:golang]\n    context: x\n---\n\n<Chunk id=\"a:c\">x</Chunk>\n")
    ws = Workspace.load(tmp_path)
    merge_entities(ws, "entity:go", ["entity:golang"])
    c, d = doc(ws, "c.md"), doc(ws, "d.md")
    assert [e.data for e in c.entities][0] == {"id": "entity:go", "name": "Go", "type": "skill", "aliases": ["Golang"]}
    assert d.entry_by_id("entities", "entity:go").data == {"id": "entity:go", "name": "Go", "type": "skill", "aliases": ["Golang"]}
    assert d.chunks[0].data["entities"] == ["entity:x", "entity:go"]
    assert doc(ws, "a.md").entities[0].data["aliases"] == ["Golang"]
    assert_valid(c, d)


def test_merge_dry_run_shows_the_diff_and_writes_nothing(ws, ws_dir):
    before = {d.path.name: d.text for d in ws.docs}
    diff = merge_entities(ws, "entity:javascript", ["entity:js"], dry_run=True)
    assert isinstance(diff, str)
    assert f"--- {ws_dir / 'a.md'}" in diff and f"+++ {ws_dir / 'b.md'}" in diff
    assert diff_changes(diff) == [
        "-    aliases: [ECMAScript]",
        "-  - id: entity:js",
        "-    name: JS",
        "-    type: skill",
        "-    aliases: [js-lang]",
        "+    aliases: [ECMAScript, JS, js-lang]",
        "-    entities: [entity:react, entity:js, entity:javascript]  # links",
        "+    entities: [entity:react, entity:javascript]  # links",
        "-  - id: entity:js",
        "-    name: JS",
        "+  - id: entity:javascript",
        "+    name: JavaScript",
        "+    aliases: [ECMAScript, JS, js-lang]",
        "-    entities: [entity:node, entity:js]",
        "+    entities: [entity:node, entity:javascript]",
    ]
    assert {d.path.name: d.text for d in ws.docs} == before
    assert not ws.dirty and ws.save() == []
    assert (ws_dir / "a.md").read_text() == DOC_A and (ws_dir / "b.md").read_text() == DOC_B


def test_undo_redo_restore_exact_bytes(ws, ws_dir):
    raw = {p.name: p.read_bytes() for p in ws_dir.iterdir()}
    rec = merge_entities(ws, "entity:javascript", ["entity:js"])
    ws.save()
    after = {p.name: p.read_bytes() for p in ws_dir.iterdir()}
    assert after != raw
    rec.undo(ws)
    assert sorted(p.name for p in ws.save()) == ["a.md", "b.md"]
    assert {p.name: p.read_bytes() for p in ws_dir.iterdir()} == raw
    rec.redo(ws)
    ws.save()
    assert {p.name: p.read_bytes() for p in ws_dir.iterdir()} == after
    with pytest.raises(EntityOpError, match="changed since"):
        rec.redo(ws)  # already applied: the text is no longer the 'before' text


def test_undo_stack(ws):
    stack = UndoStack()
    original = [d.text for d in ws.docs]
    stack.run(ws, add_alias, "entity:react", "ReactJS")
    mid = [d.text for d in ws.docs]
    stack.run(ws, rename_entity_id, "entity:react", "entity:reactjs")
    assert stack.can_undo and not stack.can_redo
    stack.undo(ws)
    assert [d.text for d in ws.docs] == mid
    stack.undo(ws)
    assert [d.text for d in ws.docs] == original
    assert stack.undo(ws) is None and stack.can_redo
    stack.redo(ws)
    assert [d.text for d in ws.docs] == mid
    stack.run(ws, update_entity, "entity:react", name="React.js")
    assert not stack.can_redo  # a new operation clears redo
    assert stack.redo(ws) is None


# ---------------------------------------------------------------- other operations


def test_rename_entity_id_everywhere_keeps_dash_and_comment(ws):
    a, b = doc(ws, "a.md"), doc(ws, "b.md")
    a_before, b_before = a.text, b.text
    rename_entity_id(ws, "entity:javascript", "entity:ecmascript")
    assert changed(a_before, a.text) == [
        "-  - id: entity:javascript   # the canonical one",
        "+  - id: entity:ecmascript   # the canonical one",
        "-    entities: [entity:react, entity:js, entity:javascript]  # links",
        "+    entities: [entity:react, entity:js, entity:ecmascript]  # links",
    ]
    assert b.text == b_before
    assert_valid(a, b)


def test_rename_state_rewrites_negated_refs(ws):
    a = doc(ws, "a.md")
    before = a.text
    rename_entity_id(ws, "entity:page-ready", "entity:ready")
    assert changed(before, a.text) == [
        "-  - id: entity:page-ready",
        "+  - id: entity:ready",
        '-      - "NOT entity:page-ready"',
        '+      - "NOT entity:ready"',
        "-    postconditions: [entity:page-ready, entity:page-loaded]",
        "+    postconditions: [entity:ready, entity:page-loaded]",
        "-    state_refs: [entity:page-loaded, entity:page-ready]",
        "+    state_refs: [entity:page-loaded, entity:ready]",
    ]
    assert_valid(a)


def test_update_entity_name_and_type(ws):
    a, b = doc(ws, "a.md"), doc(ws, "b.md")
    a_before, b_before = a.text, b.text
    update_entity(ws, "entity:js", name="js-lang", type="tool")
    assert changed(a_before, a.text) == [
        "-    name: JS", "-    type: skill", "-    aliases: [js-lang]",
        "+    name: js-lang", "+    type: tool", "+    aliases: []",
    ]
    assert changed(b_before, b.text) == ["-    name: JS", "-    type: skill", "+    name: js-lang", "+    type: tool"]
    with pytest.raises(EntityOpError, match="unknown entity type"):
        update_entity(ws, "entity:js", type="gizmo")
    with pytest.raises(EntityOpError, match="nothing to update"):
        update_entity(ws, "entity:js")
    with pytest.raises(EntityOpError, match="world-model state"):
        update_entity(ws, "entity:page-ready", type="concept")


def test_add_and_remove_alias(ws):
    a, b = doc(ws, "a.md"), doc(ws, "b.md")
    a_before, b_before = a.text, b.text
    add_alias(ws, "entity:js", "JScript")
    assert changed(a_before, a.text) == ["-    aliases: [js-lang]", "+    aliases: [js-lang, JScript]"]
    assert changed(b_before, b.text) == ['+    aliases: [JScript]']
    with pytest.raises(EntityOpError, match="already the name or an alias"):
        add_alias(ws, "entity:js", "jscript")
    with pytest.raises(EntityOpError, match="already the name or an alias"):
        add_alias(ws, "entity:react", "react")
    remove_alias(ws, "entity:js", "JSCRIPT")
    assert a.text == a_before
    assert b.entry_by_id("entities", "entity:js").data["aliases"] == []
    with pytest.raises(EntityOpError, match="not an alias"):
        remove_alias(ws, "entity:js", "nope")


def test_delete_entity_and_its_links(ws):
    a, b = doc(ws, "a.md"), doc(ws, "b.md")
    delete_entity(ws, "entity:js")
    assert a.entry_by_id("entities", "entity:js") is None and b.entry_by_id("entities", "entity:js") is None
    assert a.chunks[0].data["entities"] == ["entity:react", "entity:javascript"]
    assert b.chunks[0].data["entities"] == ["entity:node"]
    delete_entity(ws, "entity:page-ready")
    render = a.entry_by_id("entities", "entity:render").data
    assert render["preconditions"] == ["entity:page-loaded"]  # the NOT-prefixed reference goes too
    assert render["postconditions"] == ["entity:page-loaded"]
    assert_valid(a, b)
    assert "# a comment between entities" in a.text


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("call, message", [
    (lambda ws: merge_entities(ws, "entity:js", ["entity:js"]), "into itself"),
    (lambda ws: merge_entities(ws, "entity:nope", ["entity:js"]), "unknown entity 'entity:nope'"),
    (lambda ws: merge_entities(ws, "entity:javascript", ["entity:nope"]), "unknown entity 'entity:nope'"),
    (lambda ws: merge_entities(ws, "entity:javascript", []), "nothing to merge"),
    (lambda ws: merge_entities(ws, "entity:react", ["entity:page-ready"]), "world-model state"),
    (lambda ws: rename_entity_id(ws, "entity:js", "entity:react"), "already exists"),
    (lambda ws: rename_entity_id(ws, "entity:js", "entity: js"), "invalid entity id"),
    (lambda ws: rename_entity_id(ws, "entity:js", ""), "invalid entity id"),
    (lambda ws: rename_entity_id(ws, "entity:js", "NOT entity:x"), "invalid entity id"),
    (lambda ws: rename_entity_id(ws, "entity:nope", "entity:x"), "unknown entity"),
    (lambda ws: delete_entity(ws, "entity:nope"), "unknown entity"),
    (lambda ws: add_alias(ws, "entity:nope", "x"), "unknown entity"),
    (lambda ws: add_alias(ws, "entity:js", "  "), "invalid alias"),
])
def test_errors_are_one_line_value_errors(ws, call, message):
    before = [d.text for d in ws.docs]
    with pytest.raises(EntityOpError, match=message) as exc:
        call(ws)
    assert isinstance(exc.value, ValueError) and "\n" not in str(exc.value)
    assert [d.text for d in ws.docs] == before


# ---------------------------------------------------------------- other layouts


def test_flow_style_entries_and_sections(tmp_path):
    (tmp_path / "f.md").write_text(
        "---\n"
        "entities:\n"
        "  - {id: entity:js, name: JS, type: skill}\n"
        "  - {id: entity:javascript, name: JavaScript, type: skill}\n"
        "chunks: [{id: a:b, entities: [entity:js], context: x}]\n"
        "---\n\n<Chunk id=\"a:b\">x</Chunk>\n")
    ws = Workspace.load(tmp_path)
    merge_entities(ws, "entity:javascript", ["entity:js"])
    d = ws.docs[0]
    assert [e.data for e in d.entities] == [{"id": "entity:javascript", "name": "JavaScript", "type": "skill", "aliases": ["JS"]}]
    assert d.chunks[0].data["entities"] == ["entity:javascript"]
    assert "  - {id: entity:javascript, name: JavaScript, type: skill, aliases: [JS]}" in d.text
    assert_valid(d)


def test_crlf_document_keeps_its_line_endings(tmp_path):
    (tmp_path / "w.md").write_bytes(DOC_B.replace("\n", "\r\n").encode())
    ws = Workspace.load(tmp_path)
    rename_entity_id(ws, "entity:js", "entity:javascript")
    ws.save()
    raw = (tmp_path / "w.md").read_bytes()
    assert b"  - id: entity:javascript\r\n" in raw
    assert raw.count(b"\r\n") == raw.count(b"\n")


def test_unparseable_documents_are_left_alone(tmp_path, ws_dir):
    (ws_dir / "broken.md").write_text("---\ntitle: [unclosed\nentities: x\n---\nbody entity:js\n")
    ws = Workspace.load(ws_dir)
    rec = merge_entities(ws, "entity:javascript", ["entity:js"])
    assert sorted(c.path.name for c in rec.changes) == ["a.md", "b.md"]


def test_forget_drops_the_records_of_a_replaced_document_and_keeps_the_others(tmp_path):
    """After a document is re-read from disk its records can never apply; they must not block the rest."""
    from ctxfst_tui.core.workspace.undo import UndoRecord, DocChange, UndoStack, combine

    a, b = tmp_path / "a.md", tmp_path / "b.md"
    stack = UndoStack()
    stack.push(UndoRecord("edit", "edit b", [DocChange(b, 1, "b0", "b1")]))
    stack.push(UndoRecord("edit", "edit a", [DocChange(a, 0, "a0", "a1")]))
    stack.push(UndoRecord("edit", "edit both", [DocChange(a, 0, "a1", "a2"), DocChange(b, 1, "b1", "b2")]))
    assert stack.forget(a) == 2
    assert stack.can_undo and [r.description for r in stack.done] == ["edit b"]
    merged = combine("two steps", [UndoRecord("merge", "1", [DocChange(a, 0, "x", "y")]),
                                   UndoRecord("alias", "2", [DocChange(a, 0, "y", "z"), DocChange(b, 1, "p", "p")])])
    assert [(c.path, c.before, c.after) for c in merged.changes] == [(a, "x", "z")]  # b is unchanged: dropped
    assert merged.op == "edit" and merged.description == "two steps"


def test_dirty_follows_the_text_against_what_was_last_read_or_written(tmp_path):
    from ctxfst_tui.core.format.document import Document

    path = tmp_path / "d.md"
    path.write_bytes(b"\xef\xbb\xbfline one\r\nline two\r\n")
    doc = Document.load(path)
    assert not doc.dirty
    doc.replace_text(doc.text.replace("one", "1"))
    assert doc.dirty
    doc.replace_text(doc.text.replace("1", "one"))
    assert not doc.dirty  # edited back: nothing to save
    doc.replace_text(doc.text + "line three\r\n")
    assert doc.save() and not doc.dirty
    assert path.read_bytes() == b"\xef\xbb\xbfline one\r\nline two\r\nline three\r\n"


def test_session_reload_from_disk_forgets_only_when_the_text_changed(tmp_path):
    from ctxfst_tui.core.format.document import Document
    from ctxfst_tui.core.workspace.workspace import Workspace
    from ctxfst_tui.core.workspace.entity_ops import add_alias
    from ctxfst_tui.services.session import Session

    path = tmp_path / "doc.md"
    path.write_text("---\nentities:\n  - id: entity:js\n    name: JavaScript\nchunks: []\n---\n")
    session = Session(tmp_path)
    session.adopt(Workspace([Document.load(path)], tmp_path))
    session.run(add_alias, "entity:js", "JS")
    session.workspace.save()
    assert not session.replace_document(Document.load(path))  # our own save read back: same text
    assert session.undo.can_undo
    path.write_text(path.read_text() + "\nAppended by another program.\n")
    assert session.replace_document(Document.load(path))
    assert not session.undo.can_undo  # the alias record described text that is gone
