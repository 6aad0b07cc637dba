"""Entity suggestions: the deterministic pass, normalisation (canonical names, kebab ids, CtxFST
types), generic words, matching existing entities and aliases, model candidates checked against
the text, and apply_proposals writing with minimal diffs and an undo record."""
from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.workspace.undo import UndoStack
from ctxfst_tui.core.workspace.workspace import Workspace
from ctxfst_tui.core.entities.extract import (
    apply_proposals,
    deterministic_candidates,
    entity_id,
    exact_terms,
    extract_entities,
    kebab,
)
from ctxfst_tui.cli.entities import format_proposals
from ctxfst_tui.core.llm import ModelError
from ctxfst_tui.core.format.schema import ENTITY_TYPES as VALID_ENTITY_TYPES
from ctxfst_tui.core.format.validate import has_errors, validate
from fakes import EntityNamer

ROOT = Path(__file__).resolve().parents[2]

DOC = """\
---
title: "Platform notes"
entities:
  - id: entity:kubernetes   # the cluster
    name: Kubernetes
    type: platform
    aliases: [K8s]
  - id: entity:postgresql
    name: PostgreSQL
    type: database
chunks:
  - id: ops:deploy
    entities: [entity:kubernetes]
    context: "Deploying"
  - id: ops:db
    context: "The database"
  - id: ops:misc
---

<Chunk id="ops:deploy">
## Deploy

Every merge runs the CI pipeline. Deploy to K8s with `helm upgrade --install web ./chart` and watch it with
`kubectl rollout status deploy/web`. The Google Kubernetes Engine (GKE) cluster runs the System.
</Chunk>

<Chunk id="ops:db">
## Database

The app talks to Postgres through PgBouncer. Sessions live in Redis with `allkeys-lru`.
Nothing here is about the Project or the Data.
</Chunk>

<Chunk id="ops:misc">
## Misc

Go to the dashboard. We write services in Go and C++, and the frontend in TypeScript.
</Chunk>
"""


def _props(doc=None, **kw):
    return extract_entities(doc or Document.from_text(DOC), **kw)


def test_deterministic_candidates_and_normalisation():
    props = _props()
    new = {p.id: p for p in props.entities}
    assert new["entity:continuous-integration"].name == "Continuous Integration"
    assert new["entity:continuous-integration"].aliases == ["CI"]
    assert new["entity:helm"].name == "Helm" and new["entity:helm"].type == "tool"  # `helm upgrade ...`
    assert new["entity:kubectl"].type == "tool"
    gke = new["entity:google-kubernetes-engine"]
    assert gke.name == "Google Kubernetes Engine" and "GKE" in gke.aliases and gke.type == "platform"
    assert new["entity:pgbouncer"].type == "tool"
    assert new["entity:redis"].type == "database"
    assert new["entity:allkeys-lru"].sources == ["code"]
    assert new["entity:go"].type == "skill" and new["entity:c-plus-plus"].name == "C++"
    assert new["entity:typescript"].type == "skill"
    for p in props.entities:
        assert p.type in VALID_ENTITY_TYPES and p.id == entity_id(p.name) and p.chunks


def test_generic_words_and_sentence_starts_are_dropped():
    ids = {p.id for p in _props().entities}
    for bad in ("entity:system", "entity:project", "entity:data", "entity:nothing", "entity:every", "entity:deploy",
                "entity:sessions", "entity:the-google-kubernetes-engine"):
        assert bad not in ids, bad


def test_go_the_verb_is_not_go_the_language():
    props = _props()
    go = next(p for p in props.entities if p.id == "entity:go")
    assert go.chunks == ["ops:misc"] and go.forms == ["Go"]
    cands = deterministic_candidates("Go to the page and go home.")
    assert not [c for c in cands if c.surface.lower() == "go"]


def test_existing_entities_and_aliases_are_matched_not_duplicated():
    props = _props()
    ids = {p.id for p in props.entities}
    assert "entity:kubernetes" not in ids and "entity:k8s" not in ids
    assert "entity:postgresql" not in ids and "entity:postgres" not in ids
    matched = {p.id: p for p in props.matched}
    # Postgres (a table alias of PostgreSQL) in ops:db, which does not link it yet
    assert "entity:postgresql" in matched and matched["entity:postgresql"].existing == "entity:postgresql"
    links = {(link.chunk_id, link.entity_id) for link in props.links}
    assert ("ops:db", "entity:postgresql") in links
    assert ("ops:deploy", "entity:kubernetes") not in links  # already linked


def test_workspace_entities_are_matched_too():
    props = _props(existing=[{"id": "entity:redis-cache", "name": "Redis", "type": "database"}])
    assert "entity:redis" not in {p.id for p in props.entities}
    assert ("ops:db", "entity:redis-cache") in {(link.chunk_id, link.entity_id) for link in props.links}


def test_kebab_ids():
    assert kebab("Google Kubernetes Engine") == "google-kubernetes-engine"
    assert kebab("C#") == "c-sharp" and kebab("C++") == "c-plus-plus" and kebab(".NET") == "dot-net"
    assert kebab("Node.js") == "node-js" and kebab("Café Crème") == "cafe-creme"


def test_exact_terms():
    terms = exact_terms("Run `helm upgrade --install web ./chart` on K8s. The CI job uses PgBouncer and `main`.")
    assert terms[:2] == ["helm upgrade --install web ./chart", "main"]
    assert "PgBouncer" in terms and "CI" in terms and "K8s" in terms


def test_model_candidates_must_occur_in_the_chunk():
    model = EntityNamer()
    props = _props(backend=model)
    assert model.calls == 3 and props.model_calls == 3
    assert ("Fakeium", "named by the model but not in the chunk") in props.dropped
    ids = {p.id for p in props.entities}
    assert "entity:fakeium" not in ids
    dash = next(p for p in props.entities if p.id == "entity:dashboard")
    assert dash.sources == ["model"] and dash.type == "product" and dash.chunks == ["ops:misc"]


def test_model_errors_are_reported_and_the_deterministic_pass_still_runs():
    props = _props(backend=EntityNamer(ModelError("model file not found: x.gguf")))
    assert len(props.model_errors) == 3 and "model file not found" in props.model_errors[0]
    assert any(p.id == "entity:helm" for p in props.entities)
    assert "model error" in format_proposals(props)


def test_apply_proposals_minimal_diff_and_undo(tmp_path):
    doc = Document.from_text(DOC, tmp_path / "notes.md")
    props = extract_entities(doc)
    record = apply_proposals(doc, props)
    assert not has_errors(validate(doc))
    ids = [e.id for e in doc.entities]
    assert ids[:2] == ["entity:kubernetes", "entity:postgresql"] and "entity:helm" in ids
    helm = doc.entry_by_id("entities", "entity:helm").data
    assert helm == {"id": "entity:helm", "name": "Helm", "type": "tool", "aliases": []}
    links = {c.id: c.data.get("entities") for c in doc.chunks}
    assert links["ops:deploy"][0] == "entity:kubernetes" and "entity:helm" in links["ops:deploy"]
    assert "entity:postgresql" in links["ops:db"]
    # nothing else changed: removed lines are only the chunk link lines that grew
    removed = [ln for ln in difflib.unified_diff(DOC.splitlines(), doc.text.splitlines(), lineterm="", n=0)
               if ln.startswith("-") and not ln.startswith("---")]
    assert removed == ["-    entities: [entity:kubernetes]"]
    assert "# the cluster" in doc.text
    ws = Workspace([doc])
    stack = UndoStack()
    stack.push(record)
    stack.undo(ws)
    assert doc.text == DOC


def test_apply_only_chosen_entities(tmp_path):
    doc = Document.from_text(DOC)
    props = extract_entities(doc)
    apply_proposals(doc, props, entities=["entity:helm"])
    new_ids = [e.id for e in doc.entities][2:]
    assert new_ids == ["entity:helm"]
    all_links = {x for c in doc.chunks for x in (c.data.get("entities") or [])}
    assert "entity:kubectl" not in all_links and "entity:helm" in all_links


def test_sample_runbook_suggestions():
    doc = Document.load(ROOT / "sample_docs" / "platform-runbook.ctxfst.md")
    props = extract_entities(doc)
    ids = {p.id for p in props.entities}
    assert {"entity:continuous-integration", "entity:kubectl", "entity:pgbouncer"} <= ids
    assert not ids & {"entity:kubernetes", "entity:helm", "entity:postgresql", "entity:nothing", "entity:watch"}


def test_unreadable_document():
    props = extract_entities(Document.from_text("---\ntitle: [x\n---\n"))
    assert not props.entities and props.dropped


def test_real_model_entity_pass(tmp_path, bundled_llama):
    from ctxfst_tui.core.llm import CachedBackend, CompletionCache

    backend = CachedBackend(bundled_llama, CompletionCache(tmp_path / "c.sqlite"))  # a fresh cache: the model answers
    doc = Document.from_text(DOC)
    props = extract_entities(doc, backend)
    assert props.model_calls == 3 and not props.model_errors
    for p in props.entities:
        assert p.type in VALID_ENTITY_TYPES
        if "model" in p.sources:  # whatever the model named is really in the text
            assert any(f.lower() in doc.text.lower() for f in p.forms)
    again = extract_entities(Document.from_text(DOC), backend)
    assert again.model_calls == 0 and [p.id for p in again.entities] == [p.id for p in props.entities]
