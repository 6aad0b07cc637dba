"""Chunk-quality diagnosis: the checks of the reference ``diagnose_chunks.py``, with positions, and more.

The report keeps the reference's JSON shape (``filepath``, ``stats``, ``issues`` of
``category``/``severity``/``chunk_ids``/``message`` plus ``suggestion`` and ``fix`` by level)
so tools written for the reference keep working. Each issue also carries a stable ``rule``
code, the ids it concerns (``chunk_ids``, ``entity_ids``) and the exact ``line``/``column``
of the frontmatter entry or field (or of the ``<Chunk>`` tag for body-only problems).

This module runs the checks and builds the reports. The issue model is in :mod:`.issue`, the
shared records and workspace lookups in :mod:`.index`, and each family of checks in its own
module: :mod:`.structure`, :mod:`.similarity`, :mod:`.contexts`, :mod:`.sizes`, :mod:`.tags`,
:mod:`.context_comments`, :mod:`.ids`, :mod:`.catalog` (noise and duplication), :mod:`.links`,
:mod:`.dependencies`.

Categories and rules (severity in brackets; the severities are the table of core/format/rules.py)::

    structure            file-*, yaml-*, frontmatter-unclosed, frontmatter-not-mapping, chunks-not-list,
                         no-valid-chunks (no frontmatter, no 'chunks' list, or no entry with an id;
                         ``cause`` says which) [error]; chunk-skipped [warning]
    semantic_similarity  similar-chunks [warning]: word Jaccard >= 0.6 (reference) or TF-IDF cosine >= 0.5
    context_quality      context-empty [error], context-short [warning], context-long [info],
                         context-echo [warning], context-placeholder [warning], context-in-comment
                         [warning] and context-conflict [warning] (a <!-- Context: --> comment in the body)
    chunk_size           chunk-small [info] (< 100 cl100k tokens), chunk-large [warning] (> 1,500)
    tag_overlap          tags-ubiquitous [info], tags-identical [warning]
    id_naming            id-format [warning], id-rare-prefix [info]
    entity_noise         entity-generic [warning]
    entity_duplication   entity-duplicate-name [warning] (the reference's case-insensitive name check),
                         entity-duplicate [warning] (a "sure" alias cluster), entity-possible-duplicate
                         [info] (a "review" cluster), entity-inconsistent [warning] (one id, several
                         names/types across documents)
    entity_linking       entity-undefined [error] (one per bad reference), entity-links-many [warning],
                         entity-unused [info], entity-missing-link [warning] (named in the context or
                         twice), entity-unlinked-mention [info] (named once, in the content),
                         entity-weak-link [info], entity-alias-candidate [info]
    dependencies         dependency-unknown [warning], dependency-external [info], dependency-cycle [warning]

At ``--level fix`` an issue that can be repaired mechanically carries ``fix``: an operation
dict that :func:`ctxfst_tui.core.workspace.fixes.apply_fix` applies (``op`` is one of merge_entities,
add_alias, update_entity, delete_entity, declare_entity, link_entity, unlink_entity,
relink_entity, set_context, move_context_comment, remove_dependency). ``set_context`` keeps the
reference's own patch key (``context``).

Workspaces: :func:`diagnose_workspace` diagnoses several documents as one workspace and
returns one report per document. Cross-document knowledge is used everywhere: TF-IDF
weights come from all chunks; a pair of similar chunks from two documents is reported in
the reports of **both** documents (each at its own chunk, with ``files`` naming the two);
an entity cluster spanning documents is reported in every document declaring a member
(the same ``merge_entities`` fix, which acts on the whole workspace); an entity counts as
used when any document links it; a dependency cycle is reported once, in the document
whose ``dependencies`` entry the fix removes.

Unlike the reference, diagnosis never raises: broken YAML, a missing frontmatter, entries
that are not mappings, non-string ids or entity references all become issues.
"""
from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

from ctxfst_tui.core.diagnosis.catalog import entity_clusters, entity_duplication, entity_noise
from ctxfst_tui.core.diagnosis.context_comments import context_comments
from ctxfst_tui.core.diagnosis.contexts import context_quality
from ctxfst_tui.core.diagnosis.dependencies import dependencies, dependency_cycles
from ctxfst_tui.core.diagnosis.ids import id_naming
from ctxfst_tui.core.diagnosis.index import DocumentDiagnosis, WorkspaceIndex, index_chunks, index_entities
from ctxfst_tui.core.diagnosis.issue import CATEGORIES, LEVELS
from ctxfst_tui.core.diagnosis.links import entity_linking
from ctxfst_tui.core.diagnosis.similarity import semantic_similarity, similarity
from ctxfst_tui.core.diagnosis.sizes import chunk_size, count_tokens
from ctxfst_tui.core.diagnosis.structure import structure
from ctxfst_tui.core.diagnosis.tags import tag_overlap
from ctxfst_tui.core.format.document import Document

# Workspace steps fill the index every document's checks read; they run after every document's
# structure check and before any other check.
WORKSPACE_STEPS = (index_chunks, index_entities, similarity, entity_clusters, count_tokens, dependency_cycles)


def _run(ws: WorkspaceIndex) -> None:
    for d in ws.diags:
        try:
            d.ok = structure(d)
        except Exception as exc:  # pragma: no cover
            d.add("structure", "diagnose-internal-error", [],
                  f"Diagnosis stopped early on an internal error: {type(exc).__name__}: {exc}",
                  "Please report this document; the findings above it are still valid.")
    for step in WORKSPACE_STEPS:
        try:
            step(ws)
        except Exception as exc:  # pragma: no cover - keep the per-document checks running
            ws.diags[0].add("structure", "diagnose-internal-error", [],
                            f"Workspace step '{step.__name__}' failed: {type(exc).__name__}: {exc}",
                            "Please report this workspace; per-document findings are still valid.")
    for d in ws.diags:
        _checks(d)


def _checks(d: DocumentDiagnosis) -> None:
    steps = []
    if d.ok:
        steps += [semantic_similarity, context_quality, context_comments, chunk_size, tag_overlap, id_naming]
    if d.doc.data is not None:  # the catalog is worth checking even without usable chunks
        steps += [entity_noise, entity_duplication, entity_linking]
    if d.ok:
        steps.append(dependencies)
    for step in steps:
        try:
            step(d)
        except Exception as exc:  # pragma: no cover - a bug must not take the whole workspace down
            d.add("structure", "diagnose-internal-error", [],
                  f"Diagnosis step '{step.__name__}' stopped on an internal error: {type(exc).__name__}: {exc}",
                  "Please report this document; the other findings are still valid.")


def _stats(d: DocumentDiagnosis) -> dict[str, Any]:
    chunks = d.chunks
    entities = (d.doc.data or {}).get("entities")
    by_sev = Counter(i.severity for i in d.issues)
    out = {
        "chunk_count": len(chunks),
        "entity_count": len(entities) if isinstance(entities, list) else 0,
        "avg_context_words": (sum(len(c.context.split()) for c in chunks) / len(chunks)) if chunks else 0,
        "unique_tags": len({t for c in chunks for t in c.tags}),
        "categories": sorted({c.id.split(":")[0] for c in chunks if ":" in c.id}),
        "issues_by_severity": {s: by_sev.get(s, 0) for s in ("error", "warning", "info")},
    }
    counts = [d.ws.tokens[c.order] for c in chunks if d.ws and c.order in d.ws.tokens]
    if counts:
        out["chunk_tokens"] = {"min": min(counts), "median": statistics.median(counts), "max": max(counts),
                               "total": sum(counts)}
    return out


def _report(d: DocumentDiagnosis, level: str) -> dict[str, Any]:
    rank = {c: k for k, c in enumerate(CATEGORIES)}
    issues = sorted(d.issues, key=lambda i: rank.get(i.category, len(rank)))  # stable within a category
    d.issues = issues
    return {
        "filepath": d.doc.label,
        "stats": _stats(d),
        "issues": [i.to_json(level) for i in issues],
    }


def _check_level(level: str) -> None:
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, not {level!r}")


def diagnose(doc: Document, level: str = "diagnose") -> dict[str, Any]:
    """The reference-shaped report for one document; never raises on any document.

    ``level`` follows the reference: ``diagnose`` lists issues, ``suggest`` adds each
    ``suggestion``, ``fix`` also adds ``fix`` (an operation for
    :func:`ctxfst_tui.core.workspace.fixes.apply_fix`) where one exists.
    """
    return diagnose_workspace([doc], level)[0]


def diagnose_workspace(docs: list[Document], level: str = "diagnose") -> list[dict[str, Any]]:
    """One report per document, in the order given, computed with knowledge of all of them
    (see the module docstring for where cross-document findings appear)."""
    _check_level(level)
    ws = WorkspaceIndex(list(docs))
    _run(ws)
    if level == "fix":  # a fix is offered only when it creates no finding as bad as its own
        from ctxfst_tui.core.diagnosis.fix_safety import withhold_unsafe_fixes

        withhold_unsafe_fixes(ws)
    return [_report(d, level) for d in ws.diags]
