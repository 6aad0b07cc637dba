"""Entity profiles: the derived layer between chunks.json and the entity graph.

Reproduces the output of the CtxFST reference ``build_entity_profiles.py``:
for every canonical entity, the chunks that mention it (reverse links), the
context/content/tags aggregated from them, a few usage keywords and a
prefix-token ``representation`` text meant for embedding.  Nothing here is
written back into the core schema; profiles are recomputed from the export.
"""

from __future__ import annotations

import copy
import json
from collections import Counter, defaultdict
from typing import Any

from ctxfst_tui.core.format.schema import OPERATIONAL_TYPES, WORLD_MODEL_FIELDS
from ctxfst_tui.core.text.words import reference_terms

__all__ = [
    "DEFAULT_MAX_CONTEXTS",
    "DEFAULT_TOP_KEYWORDS",
    "CONTENT_WORD_LIMIT",
    "ProfileInputError",
    "build_entity_profiles",
    "check_export",
    "collect_mentions",
    "dumps",
    "index_entities",
    "truncate_words",
]

DEFAULT_MAX_CONTEXTS = 3
DEFAULT_TOP_KEYWORDS = 8
# One long chunk must not drown the rest of an entity's representation.
CONTENT_WORD_LIMIT = 80

# Prefix words of the representation lines: never useful as keywords.
_REPRESENTATION_PREFIXES = frozenset(
    {"name", "type", "context", "content", "related", "tags", "aliases"}
)


class ProfileInputError(ValueError):
    """The export cannot be profiled; the message is one line for the user."""


def truncate_words(text: str, limit: int = CONTENT_WORD_LIMIT) -> str:
    """Keep the first ``limit`` words; short text is returned untouched (whitespace kept)."""
    words = text.split()
    if len(words) <= limit:
        return text
    return " ".join(words[:limit])


def check_export(data: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return ``(entities, chunks)`` of a chunks.json object, or raise ProfileInputError.

    Missing lists count as empty, as in the reference; items that are not
    objects are refused here because the reference would crash on them.
    """
    if not isinstance(data, dict):
        raise ProfileInputError("export root must be a JSON object")
    chunks = data.get("chunks", [])
    entities = data.get("entities", [])
    if not isinstance(chunks, list) or not isinstance(entities, list):
        raise ProfileInputError(
            "export JSON must contain list fields 'chunks' and 'entities'"
        )
    for field_name, items in (("entities", entities), ("chunks", chunks)):
        for position, item in enumerate(items):
            if not isinstance(item, dict):
                raise ProfileInputError(
                    f"export {field_name}[{position}] is not an object"
                )
    return entities, chunks


def index_entities(entities: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Map entity id -> entity; entities without a usable id are ignored, the last duplicate wins."""
    entities_by_id: dict[str, dict[str, Any]] = {}
    for entity in entities:
        entity_id = entity.get("id")
        if isinstance(entity_id, str) and entity_id:
            entities_by_id[entity_id] = entity
    return entities_by_id


def collect_mentions(
    chunks: list[dict[str, Any]],
    entities_by_id: dict[str, dict[str, Any]],
) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """Reverse the chunk -> entity links.

    Returns the chunks mentioning each entity (in document order, repeated if a
    chunk lists the entity twice) and the sorted, stringified references to
    entities that do not exist.
    """
    mentions: dict[str, list[dict[str, Any]]] = defaultdict(list)
    dangling: set[str] = set()
    for chunk in chunks:
        referenced = chunk.get("entities", [])
        if not isinstance(referenced, list):
            continue
        for entity_ref in referenced:
            if isinstance(entity_ref, str) and entity_ref in entities_by_id:
                mentions[entity_ref].append(chunk)
            else:
                dangling.add(str(entity_ref))
    return mentions, sorted(dangling)


def _joined_strings(value: Any) -> str:
    """Space-join the items of a list field; anything else contributes no words."""
    if not isinstance(value, list):
        return ""
    return " ".join(str(item) for item in value)


def co_mentioned_entities(
    entity_id: str,
    chunk: dict[str, Any],
    entities_by_id: dict[str, dict[str, Any]],
) -> list[dict[str, Any]]:
    """The other known entities a chunk lists, in order and with repeats."""
    others = []
    for other_ref in chunk.get("entities", []):
        if other_ref == entity_id or not isinstance(other_ref, str):
            continue
        other = entities_by_id.get(other_ref)
        if other:
            others.append(other)
    return others


def _usage_keywords(
    entity: dict[str, Any],
    mentions: list[dict[str, Any]],
    entities_by_id: dict[str, dict[str, Any]],
    limit: int,
) -> list[str]:
    """Most frequent terms around an entity, excluding its own name and aliases.

    Ties keep first-seen order, so the result is deterministic for a given export.
    """
    own_terms = set(reference_terms(str(entity.get("name", ""))))
    own_terms |= set(reference_terms(_joined_strings(entity.get("aliases", []))))
    excluded = own_terms | _REPRESENTATION_PREFIXES

    term_counts: Counter[str] = Counter()
    for chunk in mentions:
        chunk_text = " ".join(
            (
                str(chunk.get("context", "")),
                str(chunk.get("content", "")),
                _joined_strings(chunk.get("tags", [])),
            )
        )
        term_counts.update(t for t in reference_terms(chunk_text) if t not in excluded)
        for other in co_mentioned_entities(entity["id"], chunk, entities_by_id):
            term_counts.update(reference_terms(str(other.get("name", ""))))
    return [term for term, _count in term_counts.most_common(limit)]


def _build_profile(
    entity: dict[str, Any],
    mentions: list[dict[str, Any]],
    entities_by_id: dict[str, dict[str, Any]],
    max_contexts: int,
    top_keywords: int,
) -> dict[str, Any]:
    """One entity's profile, keys in the reference's order."""
    entity_id = entity["id"]
    aliases = entity.get("aliases", [])
    lines = [f"name: {entity.get('name', '')}", f"type: {entity.get('type', '')}"]
    mentioned_chunks: list[str] = []
    contexts: list[str] = []
    content_excerpts: list[str] = []
    tags: set[str] = set()
    related_names: set[str] = set()

    for chunk in mentions:
        chunk_id = chunk.get("id")
        if isinstance(chunk_id, str) and chunk_id:
            mentioned_chunks.append(chunk_id)

        chunk_tags = chunk.get("tags", [])
        if isinstance(chunk_tags, list):
            tag_texts = [str(tag) for tag in chunk_tags]
            tags.update(tag_texts)
            if tag_texts:
                lines.append("tags " + " ".join(tag_texts))

        context = chunk.get("context", "")
        if isinstance(context, str) and context:
            if len(contexts) < max_contexts:
                contexts.append(context)
            lines.append("context " + context)

        content = chunk.get("content", "")
        if isinstance(content, str) and content:
            excerpt = truncate_words(content)
            content_excerpts.append(excerpt)
            lines.append("content " + excerpt)

        for other in co_mentioned_entities(entity_id, chunk, entities_by_id):
            related_names.add(str(other.get("name", other["id"])))

    if isinstance(aliases, list) and aliases:
        lines.append("aliases " + _joined_strings(aliases))
    if related_names:
        lines.append("related " + " ".join(sorted(related_names)))
    entity_type = entity.get("type", "")
    if isinstance(entity_type, str) and entity_type in OPERATIONAL_TYPES:  # (a list is not hashable)
        lines.append(f"operational_type: {entity_type}")

    profile: dict[str, Any] = {
        "id": entity_id,
        "name": copy.deepcopy(entity.get("name", "")),
        "type": copy.deepcopy(entity_type),
        "aliases": copy.deepcopy(aliases),
        "mentioned_chunks": mentioned_chunks,
        "mention_count": len(mentioned_chunks),
        "tags": sorted(tags),
        "contexts": contexts,
        "content_excerpts": content_excerpts,
        "related_entities": sorted(related_names),
        "keywords": _usage_keywords(entity, mentions, entities_by_id, top_keywords),
        "representation": "\n".join(lines),
    }
    for field_name in WORLD_MODEL_FIELDS:
        if field_name in entity:
            profile[field_name] = copy.deepcopy(entity[field_name])
    return profile


def build_entity_profiles(
    data: dict[str, Any],
    input_label: str,
    *,
    max_contexts: int = DEFAULT_MAX_CONTEXTS,
    top_keywords: int = DEFAULT_TOP_KEYWORDS,
) -> dict[str, Any]:
    """Build the entity-profiles.json object for a parsed chunks.json.

    ``input_label`` is recorded as ``meta.input`` (the reference writes the
    input path there).  Raises ProfileInputError on unusable input or options.
    """
    for option_name, value in (("max_contexts", max_contexts), ("top_keywords", top_keywords)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ProfileInputError(f"{option_name} must be an integer >= 1 (got {value!r})")
    entities, chunks = check_export(data)
    entities_by_id = index_entities(entities)
    mentions, dangling = collect_mentions(chunks, entities_by_id)

    profiles = [
        _build_profile(
            entities_by_id[entity_id],
            mentions.get(entity_id, []),
            entities_by_id,
            max_contexts,
            top_keywords,
        )
        for entity_id in sorted(entities_by_id)
    ]
    return {
        "meta": {
            "input": str(input_label),
            "source_type": "ctxfst-export",
            "profile_type": "entity-profiles",
            "entity_count": len(profiles),
            "max_contexts": max_contexts,
            "top_keywords": top_keywords,
            "dangling_chunk_entity_refs": dangling,
        },
        "entities": profiles,
    }


def dumps(profiles: dict[str, Any]) -> str:
    """entity-profiles.json text exactly as the reference writes it.

    ``json.dump(profiles, f, indent=2, ensure_ascii=False)``: two-space indent, non-ASCII
    unescaped, no trailing newline, so a re-run reproduces the reference's committed files.
    """
    return json.dumps(profiles, indent=2, ensure_ascii=False)
