"""The issue model: one finding of a diagnosis and its JSON shape at each report level.

The JSON keeps the reference ``diagnose_chunks.py`` issue object (``category``, ``severity``,
``chunk_ids``, ``message``, then ``suggestion`` and ``fix`` by level) so tools written for the
reference keep working; our own keys (``rule``, position, ``entity_ids``, extras) come after.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

LEVELS = ("diagnose", "suggest", "fix")

# Findings that the issue order follows: a report lists issues category by category.
CATEGORIES = (
    "structure", "semantic_similarity", "context_quality", "chunk_size", "tag_overlap", "id_naming",
    "entity_noise", "entity_duplication", "entity_linking", "dependencies",
)


@dataclass
class Issue:
    """One diagnosis; ``line``/``column`` are 1-based file positions (0 = whole file)."""

    category: str
    severity: str
    rule: str
    chunk_ids: list[str]
    message: str
    suggestion: str = ""
    fix: dict[str, Any] = field(default_factory=dict)
    line: int = 0
    column: int = 0
    entity_ids: list[Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self, level: str) -> dict[str, Any]:
        """The reference's issue object for ``level``, plus our extra keys."""
        out: dict[str, Any] = {
            "category": self.category,
            "severity": self.severity,
            "chunk_ids": list(self.chunk_ids),
            "message": self.message,
        }
        if level in ("suggest", "fix"):
            out["suggestion"] = self.suggestion
        if level == "fix" and self.fix:
            out["fix"] = self.fix
        out["rule"] = self.rule
        out["line"] = self.line
        out["column"] = self.column
        if self.entity_ids is not None:
            out["entity_ids"] = list(self.entity_ids)
        for k, v in self.extra.items():
            out.setdefault(k, v)
        return out
