"""Entity-catalog checks: generic entities, duplicates, and one id declared differently.

Duplicates come from the alias clustering of the whole workspace (a cluster spanning documents
is reported in each document declaring a member), plus the reference's same-name check.
"""
from __future__ import annotations

from itertools import combinations

from ctxfst_tui.core.diagnosis.index import DocumentDiagnosis, WorkspaceIndex, text_of
from ctxfst_tui.core.diagnosis.wording import json_ref, quote_list
from ctxfst_tui.core.entities.aliases import suggest_clusters
from ctxfst_tui.core.format.document import Entry

GENERIC_ENTITY_NAMES = frozenset({
    "system", "project", "tool", "computer", "work", "experience", "technology",
    "feature", "application", "problem", "task",
})


def entity_clusters(ws: WorkspaceIndex) -> None:
    """Alias clusters over every declaration of the workspace, and the pairs sharing a name."""
    ents = ws.ents
    if len({e.id for e in ents}) < 2:
        return
    entity_dicts = [{"id": e.id, "name": e.name or None, "type": e.type, "aliases": list(e.aliases)} for e in ents]
    chunk_dicts = [{"id": c.id, "entities": c.entities, "context": c.context} for c in ws.chunks]
    ws.clusters = suggest_clusters(entity_dicts, chunk_dicts)
    for cl in ws.clusters:
        for m in cl.members:
            ws.mates.setdefault(m, set()).update(x for x in cl.members if x != m)
    by_name: dict[str, set[str]] = {}
    for e in ents:
        if e.name:
            by_name.setdefault(e.name.strip().lower(), set()).add(e.id)
    for ids in by_name.values():
        ws.same_name_pairs.update(frozenset(p) for p in combinations(sorted(ids), 2))


def entity_noise(d: DocumentDiagnosis) -> None:
    """Entities named by a generic word add graph nodes that link everything to everything."""
    for e in d.doc.entities:
        if not isinstance(e.data, dict):
            continue
        name = text_of(e.data.get("name")).strip().lower()
        if name in GENERIC_ENTITY_NAMES:
            eid = text_of(e.data.get("id"))
            fix = {"op": "delete_entity", "entity_id": eid} if isinstance(e.data.get("id"), str) else None
            d.add("entity_noise", "entity-generic", [],
                  f"Entity '{eid}' uses a generic term ('{name}')",
                  "Remove generic entities and focus on domain-specific concepts, skills, or tools "
                  "(the fix deletes it and its links).",
                  fix, at=d.at(e, "name"), entity_ids=[json_ref(e.data.get("id"))])


def entity_duplication(d: DocumentDiagnosis) -> None:
    """Entities naming the same thing: alias clusters, the reference's same-name check, and
    one id declared differently in several documents."""
    covered: set[frozenset] = set()
    mine = {e.id for e in d.ents}
    for cl in d.ws.clusters if d.ws else []:
        here = [m for m in cl.members if m in mine]
        if not here:
            continue
        pairs = {frozenset(p) for p in combinations(cl.members, 2)}
        covered |= pairs
        same_name = d.ws.same_name_pairs & pairs
        rest = [m for m in cl.members if m != cl.canonical]
        anchor = next((m for m in cl.members if m in mine and m != cl.canonical), here[0])
        entry = next(e.entry for e in d.ents if e.id == anchor)
        names = ", ".join(f"{m} ('{d.ws.names.get(m, m)}')" for m in cl.members)
        elsewhere = sorted({d.ws.labels[k] for m in cl.members for k in d.ws.declared_in.get(m, []) if k != d.number})
        where = f" (also declared in {', '.join(elsewhere)})" if elsewhere else ""
        why = "; ".join(cl.reasons)
        if same_name:
            rule = "entity-duplicate-name"
            a, b = sorted(min(same_name, key=lambda p: sorted(d.ws.decl_rank(x) for x in p)), key=d.ws.decl_rank)
            msg = f"Entity '{b}' has a duplicate name '{d.ws.names.get(b, '').lower()}' already used by '{a}'"
            if len(cl.members) > 2:
                msg += f"; the cluster also holds {quote_list([m for m in cl.members if m not in (a, b)])}"
            msg += where
        elif cl.tier == "sure":
            rule = "entity-duplicate"
            msg = f"Entities {names} name the same thing{where}"
        else:
            rule = "entity-possible-duplicate"
            msg = f"Entities {names} may name the same thing (review){where}"
        msg += f"; canonical candidate: {cl.canonical}"
        d.add("entity_duplication", rule, [], msg,
              f"Merge {quote_list(rest)} into '{cl.canonical}' (their names become aliases). Why: {why}.",
              {"op": "merge_entities", "into": cl.canonical, "merged": rest},
              at=d.at(entry, "name"), entity_ids=list(cl.members),
              tier=cl.tier, canonical=cl.canonical, reasons=list(cl.reasons))
    # the reference's check, for pairs no cluster joined (e.g. the same id declared twice)
    seen: dict[str, Entry] = {}
    for e in d.doc.entities:
        if not isinstance(e.data, dict):
            continue
        name = text_of(e.data.get("name")).strip().lower()
        if not name:
            continue
        if name not in seen:
            seen[name] = e
            continue
        first = seen[name]
        eid, first_id = text_of(e.data.get("id")), text_of(first.data.get("id"))
        if frozenset((eid, first_id)) in covered:
            continue
        same_id = e.data.get("id") == first.data.get("id")
        d.add("entity_duplication", "entity-duplicate-name", [],
              f"Entity '{eid}' has a duplicate name '{name}' already used by '{first_id}'",
              "Remove the second declaration of the same id." if same_id else
              "Merge these entities into a single canonical node and use 'aliases' if needed.",
              None if same_id or not (isinstance(e.data.get("id"), str) and isinstance(first.data.get("id"), str))
              else {"op": "merge_entities", "into": first_id, "merged": [eid]},
              at=d.at(e, "name"),
              entity_ids=[json_ref(e.data.get("id")), json_ref(first.data.get("id"))])
    # one id, different identities across documents
    for e in d.ents:
        first = d.ws.first_decl.get(e.id) if d.ws else None
        if first is None or first.doc == e.doc:
            continue
        diffs = {}
        if first.name and e.name != first.name:
            diffs["name"] = first.name
        if first.type and e.type != first.type:
            diffs["type"] = first.type
        if not diffs:
            continue
        here = " and ".join(f"{k} '{getattr(e, k)}'" for k in diffs)
        there = " and ".join(f"'{v}'" for v in diffs.values())
        d.add("entity_duplication", "entity-inconsistent", [],
              f"Entity '{e.id}' has {here} here but {there} in {d.ws.docs[first.doc].label}",
              "Declare one entity the same way in every document.",
              {"op": "update_entity", "entity_id": e.id, **diffs},
              at=d.at(e.entry, next(iter(diffs))), entity_ids=[e.id])
