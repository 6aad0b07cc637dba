"""The CtxFST vocabularies: entity types, chunk fields, relations, id shapes, size guidelines.

Written once here and imported by validation, diagnosis, the entity tools and the editors,
so the checks cannot drift apart. Values follow the CtxFST skill spec and its reference
scripts (``validate_chunks.py``, ``build_entity_graph.py``).
"""
from __future__ import annotations

import re

# ---------------------------------------------------------------- entities

DESCRIPTIVE_TYPES = (
    "skill", "tool", "library", "framework", "platform", "database", "architecture",
    "protocol", "concept", "domain", "product",
)
# The world-model extension: entities that are states, actions... rather than concepts.
OPERATIONAL_TYPES = frozenset({"state", "action", "goal", "agent", "evidence"})
ENTITY_TYPES = frozenset(DESCRIPTIVE_TYPES) | OPERATIONAL_TYPES

# Entity fields of the world model, carried through to profiles and graph nodes.
WORLD_MODEL_FIELDS = ("preconditions", "postconditions", "related_skills")

# ---------------------------------------------------------------- chunks

CHUNK_LINK_FIELD = "entities"  # a chunk's list of the entity ids it mentions
# Lists of (optionally negated: ``NOT x`` / ``! x``) entity ids, on entities and chunks.
STATE_REF_FIELDS = ("preconditions", "postconditions", "state_refs")
WORLD_MODEL_LISTS = ("preconditions", "postconditions", "related_skills", "state_refs")
PRIORITIES = ("low", "medium", "high", "critical")
CHUNK_TYPES = ("text", "image", "video", "audio")
COSTS = ("low", "medium", "high")
# Optional chunk fields the export copies when present, in the reference's record order.
OPTIONAL_CHUNK_FIELDS = ("entities", "created_at", "version", "type", "priority", "dependencies", "state_refs")

# ---------------------------------------------------------------- graph

EDGE_RELATIONS = frozenset({"SIMILAR", "REQUIRES", "LEADS_TO", "EVIDENCE", "IMPLIES", "COMPLETED", "BLOCKED_BY"})

# ---------------------------------------------------------------- ids
# ``\Z``, not ``$``: ``$`` also matches before a final line break, so "chunk:a\n" (a quoted
# YAML string can hold one) would pass for a valid id.

CHUNK_ID = re.compile(r"^[a-z]+:[a-z0-9-]+\Z")  # the recommended shape: chunk:kebab-case
ENTITY_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:/+#@-]*\Z")  # what an edit may name an entity
NEGATION = re.compile(r"^\s*(?:NOT|!)\s+", re.IGNORECASE)  # the prefix of a negated state reference

# ---------------------------------------------------------------- size guidelines (cl100k tokens)

CHUNK_TOKENS_MIN = 100
CHUNK_TOKENS_TARGET = (300, 800)
CHUNK_TOKENS_MAX = 1500
