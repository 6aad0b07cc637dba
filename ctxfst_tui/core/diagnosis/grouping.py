"""Repeated findings as one: a finding of one rule, about one thing, in many chunks or documents.

A workspace whose 300 entities are declared in hundreds of documents, or a chunk text pasted into
thousands of chunks, gives the same finding thousands of times. Reports keep every finding (tools and
fixes need each one); what a person reads groups a finding repeated over more than ``GROUP_OVER``
members into one, with its count and its members. Fewer repeats are shown as they are.

A pair finding (two similar chunks) is about two chunks, maybe of two documents, and each of those
documents' reports holds it: what a person reads lists it once. Pairs are not "the same finding"
by their message but by the chunks they link: the pairs of one connected component of the pair
graph (near-duplicate pairs and merely similar pairs each their own graph) are one group once
there are more than ``GROUP_OVER`` of them, named by its chunks, most paired first.

What is left can still be thousands of lines on a folder of thousands of documents: a pair in a
cluster of two, one entity typed differently in a few documents. :func:`readable_findings` gives
each rule at most ``GROUP_OVER`` lines of single findings (pair findings: near-duplicates and
similar pairs apart); the rest of that rule, when it is more than ``SHOWN``, is one more line,
:class:`More`, with its count and its first members. Before that, a rule over budget whose
findings name one entity each (``entity-inconsistent``) is grouped by that entity, however few
documents it is in. This is for a person only: reports, ``--json`` and fixes keep every finding.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ctxfst_tui.core.diagnosis.similarity import NEAR_DUPLICATE_COSINE
from ctxfst_tui.core.text.plural import count

GROUP_OVER = 20
# rules whose message names per-member details (how a chunk writes a name, which other files):
# grouped by the entities they concern
BY_ENTITIES = frozenset({"entity-missing-link", "entity-unlinked-mention", "entity-duplicate",
                         "entity-possible-duplicate", "entity-duplicate-name", "entity-inconsistent"})
# once over budget, grouped by entity even when few: the entity is what a person fixes
BY_ENTITY_OVER_BUDGET = frozenset({"entity-inconsistent"})
PAIR_RULES = frozenset({"similar-chunks"})  # a finding about two chunks: grouped by the pair graph
SHOWN = 5  # members a grouped line names
SEEN = ("seen",)  # the key of a pair finding already listed from the other document's report
ALSO_DECLARED = re.compile(r" \(also declared in [^)]*\)")
INCONSISTENT = re.compile(r"^Entity '(?P<id>.*)' has (?P<here>.*) here but (?P<there>.*) in (?P<file>.*)$", re.S)
NUMBER = re.compile(r"\d+")


def _pairs_summary(members: list, near_duplicates: bool) -> tuple[str, str, str]:
    """What a line about many similar pairs says of them: their kind, the range of their
    similarity, and the distinctive terms they share most often."""
    scores = [max(float(i.get("cosine") or 0), float(i.get("jaccard") or 0)) for _, i in members]
    terms = Counter(t for _, i in members for t in i.get("shared_terms") or [])
    top = ", ".join(t for t, _ in terms.most_common(8)) or "none"
    low, high = f"{min(scores):.0%}", f"{max(scores):.0%}"
    return ("near-duplicate pairs" if near_duplicates else "similar pairs"), (low if low == high else f"{low}–{high}"), top


@dataclass
class Group:
    """Findings sharing a rule and a message key, with the file each one came from."""

    key: tuple
    rule: str
    members: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (file, issue)

    @property
    def first(self) -> dict[str, Any]:
        return self.members[0][1]

    @property
    def pairs(self) -> bool:
        return self.rule in PAIR_RULES

    def chunks(self) -> list[tuple[str, str, int]]:
        """A pair group's chunks as ``(file, chunk id, pairs it is in)``, most paired first."""
        degree: Counter = Counter()
        for f, issue in self.members:
            degree.update(pair_ends(f, issue))
        return [(f, c, n) for (f, c), n in sorted(degree.items(), key=lambda kv: -kv[1])]

    def files(self) -> list[str]:
        """The files the members are in (for a pair group, the files of its chunks)."""
        if self.pairs:
            return list(dict.fromkeys(f for f, _c, _n in self.chunks()))
        return list(dict.fromkeys(f for f, _ in self.members))

    def message(self) -> str:
        """What every member says; per-member details (counts, spellings, other files) left out."""
        issue = self.first
        msg = str(issue.get("message", ""))
        if self.pairs:
            kind, similarity, top = _pairs_summary(self.members, self.key[1])
            return (f"Chunks may confuse retrieval: {len(self.members):,} {kind} join these chunks into one "
                    f"cluster (similarity {similarity}). Shared distinctive terms most often: {top}")
        if self.rule in ("entity-missing-link", "entity-unlinked-mention"):
            ids = ", ".join(map(str, issue.get("entity_ids") or []))
            how = "in their context or twice" if self.rule == "entity-missing-link" else "once, in their content"
            return f"Chunks name {ids} {how} but do not link it"
        if self.rule == "entity-inconsistent":
            return _inconsistent(self.members)
        if self.rule in BY_ENTITIES:
            return ALSO_DECLARED.sub("", msg)
        if len({str(i.get("message")) for _, i in self.members}) > 1:
            return msg + " (numbers vary)"
        return msg

    def suggestion(self) -> str:
        """What to do about every member (a pair's own suggestion names its two chunks)."""
        if not self.pairs:
            return str(self.first.get("suggestion") or "")
        out = ("Differentiate the contexts of these chunks, starting with the most paired; where two say the "
               "same thing, keep one and delete the other. 'diagnose --json' lists every pair.")
        if self.key[1]:
            out = ("They are near-duplicates: where chunks say the same thing keep one and delete the others, or "
                   "rewrite what makes each one different. 'diagnose --json' lists every pair.")
        return out

    def names(self) -> tuple[list[str], str]:
        """The members as a person finds them, and what they are (chunks or files)."""
        files = self.files()
        if self.pairs:
            many = len(files) > 1
            return [f"{f} {c}" if many else c for f, c, _n in self.chunks()], "chunks"
        if all(i.get("chunk_ids") for _, i in self.members):
            many = len(files) > 1
            return [f"{f} {i['chunk_ids'][0]}" if many else str(i["chunk_ids"][0]) for f, i in self.members], "chunks"
        return [f for f, _ in self.members], "files"


def _inconsistent(members: list[tuple[str, dict[str, Any]]]) -> str:
    """One entity declared differently in many documents: how the first declares it, and each
    other way with how many findings (documents) use it."""
    found = [INCONSISTENT.match(str(i.get("message", ""))) for _, i in members]
    if not all(found):
        return str(members[0][1].get("message", ""))
    first = found[0]
    fields = re.findall(r"(?:^| and )(name|type) '", first["here"])
    values = first["there"].split(" and ") if len(fields) > 1 else [first["there"]]
    there = " and ".join(map(" ".join, zip(fields, values))) if len(values) == len(fields) else first["there"]
    ways: dict[str, set] = {}
    for (f, _), m in zip(members, found):
        ways.setdefault(m["here"], set()).add(f)
    listed = ", ".join(f"{w} in {count(len(fs), 'file', grouped=True)}"
                       for w, fs in sorted(ways.items(), key=lambda kv: -len(kv[1])))
    return f"Entity '{first['id']}' is {there} in {first['file']} but {listed}"


@dataclass
class More(Group):
    """The rest of one rule's single findings past the budget: one line for a person."""

    clusters: dict = field(default_factory=dict)  # pairs: each cluster they are in, and its pairs in all

    def names(self) -> tuple[list[str], str]:
        """Pairs: their chunks, most paired first; other findings: each one's file (and first chunk)."""
        if self.pairs:
            return super().names()
        many = len(self.files()) > 1
        firsts = [(f, [str(c) for c in (i.get("chunk_ids") or [])[:1]]) for f, i in self.members]
        return [" ".join(([f] if many or not c else []) + c) for f, c in firsts], "findings"

    def message(self) -> str:
        issue = self.first
        n = len(self.members)
        if self.pairs:
            kind, similarity, top = _pairs_summary(self.members, self.key[1])
            ones = sum(1 for c in self.clusters.values() if c == 1)
            return (f"… and {n:,} more {kind} in {len(self.clusters):,} smaller clusters ({ones:,} of one pair; "
                    f"similarity {similarity}). Shared distinctive terms most often: {top}")
        if self.rule in BY_ENTITIES:  # which entities they are about, the most frequent first
            about = Counter(", ".join(map(str, i.get("entity_ids") or [])) for _, i in self.members)
            top = ", ".join(f"{e} ({k:,})" for e, k in about.most_common(SHOWN))
            return (f"… and {n:,} more findings like those above, about {count(len(about), 'entity', grouped=True)}"
                    f" (most often {top})")
        return f"… and {n:,} more findings like those above, the first: {issue.get('message', '')}"

    def suggestion(self) -> str:
        if self.pairs:
            return ("Differentiate the contexts of each pair; where two say the same thing, keep one. "
                    "'diagnose --json' lists every pair.")
        said = {str(i.get("suggestion") or "") for _, i in self.members}
        first = str(self.first.get("suggestion") or "")
        return first if len(said) == 1 else f"{first} (the first's; 'diagnose --json' gives each one's)"


def pair_ends(file: str, issue: dict[str, Any]) -> tuple[tuple[str, str], tuple[str, str]]:
    """The two chunks of a pair finding as ``(file, chunk id)``; ``files`` names them when they are
    in two documents, else both are in ``file``."""
    files = issue.get("files") or [file, file]
    ids = issue.get("chunk_ids") or ["", ""]
    return (str(files[0]), str(ids[0])), (str(files[-1]), str(ids[-1]))


def group_key(issue: dict[str, Any]) -> tuple | None:
    """What makes two findings "the same finding"; None for findings never grouped by their own
    fields (pair findings are grouped by the pair graph, see :func:`_keys`)."""
    rule = str(issue.get("rule") or issue.get("category"))
    if rule in PAIR_RULES:
        return None
    if rule in BY_ENTITIES:
        return (rule, json.dumps(issue.get("entity_ids"), default=str))
    return (rule, NUMBER.sub("#", str(issue.get("message", ""))))


def _keys(items: list[tuple[str, dict[str, Any]]]) -> list[tuple | None]:
    """Each item's group key: ``group_key``, or for a pair finding its rule, whether it is a
    near-duplicate and its connected component; ``SEEN`` for the second side of a pair."""
    parent: dict[tuple, tuple] = {}

    def root(x: tuple) -> tuple:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    keys: list[tuple | None] = []
    seen: set[tuple] = set()
    pending: list[tuple[int, tuple, tuple]] = []
    for k, (f, issue) in enumerate(items):
        rule = str(issue.get("rule") or issue.get("category"))
        if rule not in PAIR_RULES:
            keys.append(group_key(issue))
            continue
        a, b = pair_ends(f, issue)
        if (rule, a, b) in seen:
            keys.append(SEEN)
            continue
        seen.add((rule, a, b))
        kind = (rule, float(issue.get("cosine") or 0) >= NEAR_DUPLICATE_COSINE)
        ra, rb = root((kind, a)), root((kind, b))
        if ra != rb:
            parent[ra] = rb
        keys.append(None)
        pending.append((k, kind, a))
    for k, kind, a in pending:
        keys[k] = (*kind, root((kind, a)))
    return keys


def group_findings(items: list[tuple[str, dict[str, Any]]]) -> list[Group | tuple[str, dict[str, Any]]]:
    """``(file, issue)`` pairs in order, each pair finding once, with each finding repeated over
    ``GROUP_OVER`` members replaced by one ``Group`` at the place of its first member."""
    return _grouped(items, _keys(items))


def _grouped(items: list[tuple[str, dict[str, Any]]],
             keys: list[tuple | None]) -> list[Group | tuple[str, dict[str, Any]]]:
    """:func:`group_findings` with the items' keys known (the budget needs them too)."""
    groups: dict[tuple, Group] = {}
    for (f, issue), key in zip(items, keys):
        if key is not None and key is not SEEN:
            groups.setdefault(key, Group(key, key[0])).members.append((f, issue))
    out: list[Group | tuple[str, dict[str, Any]]] = []
    for (f, issue), key in zip(items, keys):
        if key is SEEN:
            continue
        g = groups.get(key) if key is not None else None
        if g is None or len(g.members) <= GROUP_OVER:
            out.append((f, issue))
        elif g.members[0][1] is issue:
            out.append(g)
    return out


def group_report_issues(issues: list[dict[str, Any]], label: str) -> list[dict[str, Any]]:
    """A report's issues with each finding repeated over ``GROUP_OVER`` chunks as one grouped object:
    the first member's fields, the shared message, ``count`` and ``members`` (the issues themselves).
    A pair group's ``chunk_ids`` are its chunks once each and ``chunks`` names every one with its file
    and how many of the pairs it is in, most paired first."""
    out = []
    for item in group_findings([(label, i) for i in issues]):
        if not isinstance(item, Group):
            out.append(item[1])
            continue
        first = item.first
        members = [i for _, i in item.members]
        chunk_ids = [c for i in members for c in i.get("chunk_ids", [])]
        if item.pairs:
            chunk_ids = list(dict.fromkeys(chunk_ids))
        group = {"category": first.get("category"), "severity": first.get("severity"), "chunk_ids": chunk_ids,
                 "message": item.message()}
        if item.pairs and "suggestion" in first:  # at suggest and fix level; a pair's own names its two chunks
            group["suggestion"] = item.suggestion()
        group.update({"rule": item.rule, "line": first.get("line", 0), "column": first.get("column", 0),
                      "count": len(members)})
        if item.pairs:
            group["chunks"] = [{"filepath": f, "chunk_id": c, "pairs": n} for f, c, n in item.chunks()]
        group["members"] = members
        out.append(group)
    return out


def _budget_key(item: Group | tuple[str, dict[str, Any]]) -> tuple | None:
    """The budget a single finding's line counts against: its rule, and for a pair whether it is a
    near-duplicate. None for a group, which is a summary already."""
    if isinstance(item, Group):
        return None
    issue = item[1]
    rule = str(issue.get("rule") or issue.get("category"))
    if rule in PAIR_RULES:
        return (rule, float(issue.get("cosine") or 0) >= NEAR_DUPLICATE_COSINE)
    return (rule,)


def _over_budget(out: list[Group | tuple[str, dict[str, Any]]]) -> set[tuple]:
    """The budgets with more single lines than ``GROUP_OVER`` and ``SHOWN`` more (a rest of a few
    is printed as it is)."""
    singles = Counter(k for k in map(_budget_key, out) if k is not None)
    return {k for k, n in singles.items() if n > GROUP_OVER + SHOWN}


def _by_entity(out: list[Group | tuple[str, dict[str, Any]]], rule: str) -> list[Group | tuple[str, dict[str, Any]]]:
    """``rule``'s findings, grouped ones included, as one line per entity (a group when it is in
    two findings or more), at the place of its first."""
    groups: dict[str, Group] = {}
    firsts: dict[int, Group] = {}
    kept: list[Group | tuple[str, dict[str, Any]] | None] = []
    for item in out:
        members = item.members if isinstance(item, Group) else [item]
        if (item.rule if isinstance(item, Group) else _budget_key(item)[0]) != rule:
            kept.append(item)
            continue
        for f, issue in members:
            key = (rule, json.dumps(issue.get("entity_ids"), default=str))
            if key not in groups:
                groups[key] = firsts[len(kept)] = Group(key, rule)
                kept.append(None)
            groups[key].members.append((f, issue))
    return [item if item is not None else
            (firsts[k] if len(firsts[k].members) > 1 else firsts[k].members[0]) for k, item in enumerate(kept)]


def readable_findings(items: list[tuple[str, dict[str, Any]]]) -> list[Group | tuple[str, dict[str, Any]]]:
    """:func:`group_findings`, then at most ``GROUP_OVER`` single findings a rule (pairs: a kind of
    pair), its rest one :class:`More` at the place of the first left out."""
    keys = _keys(items)
    out = _grouped(items, keys)
    for rule in BY_ENTITY_OVER_BUDGET:
        if (rule,) in _over_budget(out):
            out = _by_entity(out, rule)
    over = _over_budget(out)
    if not over:
        return out
    cluster = {id(i): k for (_, i), k in zip(items, keys) if k is not SEEN}
    size = Counter(cluster.values())
    seen: Counter = Counter()
    rest: dict[tuple, More] = {}
    result: list[Group | tuple[str, dict[str, Any]]] = []
    for item in out:
        key = _budget_key(item)
        if key not in over:
            result.append(item)
            continue
        seen[key] += 1
        if seen[key] <= GROUP_OVER:
            result.append(item)
            continue
        if key not in rest:
            rest[key] = More(key, key[0])
            result.append(rest[key])
        more = rest[key]
        more.members.append(item)
        if more.pairs:  # the clusters the pairs come from, with how many pairs each holds in all
            c = cluster.get(id(item[1]))
            more.clusters[c] = size[c]
    return result
