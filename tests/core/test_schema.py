"""The CtxFST vocabularies written once: id shapes and the checks that use them."""
from __future__ import annotations

from pathlib import Path

import pytest

from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.format.schema import CHUNK_ID, ENTITY_ID, ENTITY_TYPES, NEGATION, OPERATIONAL_TYPES
from ctxfst_tui.core.workspace.entity_ops import EntityOpError, rename_entity_id
from ctxfst_tui.core.workspace.workspace import Workspace

DOC = """\
---
title: "T"
entities:
  - id: entity:kafka
    name: Kafka
    type: platform
chunks:
  - id: chunk:intro
    tags: [a]
    entities: [entity:kafka]
    context: "Intro."
---

<Chunk id="chunk:intro">
Kafka moves events.
</Chunk>
"""


def test_chunk_id_shape_refuses_a_final_line_break():
    assert CHUNK_ID.match("chunk:kafka-basics")
    for bad in ("chunk:kafka-basics\n", "Chunk:x", "chunk:x_y", "chunk", "chunk:"):
        assert not CHUNK_ID.match(bad), bad


def test_entity_id_shape_refuses_a_final_line_break():
    assert ENTITY_ID.match("entity:c++") and ENTITY_ID.match("entity:node.js/v2")
    for bad in ("entity:kafka\n", "entity: kafka", "-entity", ""):
        assert not ENTITY_ID.match(bad), bad


def test_negation_prefix_and_types():
    assert NEGATION.match("NOT entity:x") and NEGATION.match("! entity:x") and not NEGATION.match("entity:not")
    assert OPERATIONAL_TYPES < ENTITY_TYPES and "platform" in ENTITY_TYPES and "state" in OPERATIONAL_TYPES


def test_a_rename_to_an_id_ending_in_a_line_break_is_refused(tmp_path: Path):
    path = tmp_path / "a.ctxfst.md"
    path.write_text(DOC, encoding="utf-8")
    ws = Workspace([Document.load(path)], tmp_path)
    with pytest.raises(EntityOpError, match="invalid entity id"):
        rename_entity_id(ws, "entity:kafka", "entity:apache-kafka\n")
    assert ws.docs[0].text == DOC
    rename_entity_id(ws, "entity:kafka", "entity:apache-kafka")
    assert "entity:apache-kafka" in ws.docs[0].text
