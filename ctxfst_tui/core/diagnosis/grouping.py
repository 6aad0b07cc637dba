"""Repeated findings as one: a finding of one rule, about one thing, in many chunks or documents.

A workspace whose 300 entities are declared in hundreds of documents, or a chunk text pasted into
thousands of chunks, gives the same finding thousands of times. Reports keep every finding (tools and
fixes need each one); what a person reads groups a finding repeated over more than ``GROUP_OVER``
members into one, with its count and its members. Fewer repeats are shown as they are.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

GROUP_OVER = 20
# rules whose message names per-member details (how a chunk writes a name, which other files):
# grouped by the entities they concern
BY_ENTITIES = frozenset({"entity-missing-link", "entity-unlinked-mention", "entity-duplicate",
                         "entity-possible-duplicate", "entity-duplicate-name"})
UNGROUPED = frozenset({"similar-chunks"})  # each pair is its own finding
ALSO_DECLARED = re.compile(r" \(also declared in [^)]*\)")
NUMBER = re.compile(r"\d+")


@dataclass
class Group:
    """Findings sharing a rule and a message key, with the file each one came from."""

    key: tuple
    rule: str
    members: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (file, issue)

    @property
    def first(self) -> dict[str, Any]:
        return self.members[0][1]

    def message(self) -> str:
        """What every member says; per-member details (counts, spellings, other files) left out."""
        issue = self.first
        msg = str(issue.get("message", ""))
        if self.rule in ("entity-missing-link", "entity-unlinked-mention"):
            ids = ", ".join(map(str, issue.get("entity_ids") or []))
            how = "in their context or twice" if self.rule == "entity-missing-link" else "once, in their content"
            return f"Chunks name {ids} {how} but do not link it"
        if self.rule in BY_ENTITIES:
            return ALSO_DECLARED.sub("", msg)
        if len({str(i.get("message")) for _, i in self.members}) > 1:
            return msg + " (numbers vary)"
        return msg

    def names(self) -> tuple[list[str], str]:
        """The members as a person finds them, and what they are (chunks or files)."""
        files = list(dict.fromkeys(f for f, _ in self.members))
        if all(i.get("chunk_ids") for _, i in self.members):
            many = len(files) > 1
            return [f"{f} {i['chunk_ids'][0]}" if many else str(i["chunk_ids"][0]) for f, i in self.members], "chunks"
        return [f for f, _ in self.members], "files"


def group_key(issue: dict[str, Any]) -> tuple | None:
    """What makes two findings "the same finding"; None for findings never grouped."""
    rule = str(issue.get("rule") or issue.get("category"))
    if rule in UNGROUPED:
        return None
    if rule in BY_ENTITIES:
        return (rule, json.dumps(issue.get("entity_ids"), default=str))
    return (rule, NUMBER.sub("#", str(issue.get("message", ""))))


def group_findings(items: list[tuple[str, dict[str, Any]]]) -> list[Group | tuple[str, dict[str, Any]]]:
    """``(file, issue)`` pairs in order, with each finding repeated over ``GROUP_OVER`` members
    replaced by one ``Group`` at the place of its first member."""
    groups: dict[tuple, Group] = {}
    for f, issue in items:
        key = group_key(issue)
        if key is not None:
            groups.setdefault(key, Group(key, key[0])).members.append((f, issue))
    out: list[Group | tuple[str, dict[str, Any]]] = []
    for f, issue in items:
        key = group_key(issue)
        g = groups.get(key) if key is not None else None
        if g is None or len(g.members) <= GROUP_OVER:
            out.append((f, issue))
        elif g.members[0][1] is issue:
            out.append(g)
    return out


def group_report_issues(issues: list[dict[str, Any]], label: str) -> list[dict[str, Any]]:
    """A report's issues with each finding repeated over ``GROUP_OVER`` chunks as one grouped object:
    the first member's fields, the shared message, ``count`` and ``members`` (the issues themselves)."""
    out = []
    for item in group_findings([(label, i) for i in issues]):
        if not isinstance(item, Group):
            out.append(item[1])
            continue
        first = item.first
        members = [i for _, i in item.members]
        out.append({
            "category": first.get("category"), "severity": first.get("severity"),
            "chunk_ids": [c for i in members for c in i.get("chunk_ids", [])],
            "message": item.message(), "rule": item.rule, "line": first.get("line", 0),
            "column": first.get("column", 0), "count": len(members), "members": members,
        })
    return out
