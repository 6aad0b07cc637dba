"""Alias clustering: which entities of a workspace name the same thing, and how sure that is.

``suggest_clusters(entities, chunks=None, table=None)`` compares every pair of entities
(their names and declared aliases; the id only when an entity has no name) and combines
several kinds of evidence into clusters of two tiers:

* **sure** — safe to merge in one keystroke: the names differ only in case, punctuation
  or spacing (``Next.js``/``NextJS``); a declared alias of one is the name or an alias of
  the other (``Apache Kafka``); both are forms of one entry of the curated table
  ``data/tech_aliases.json`` (``Golang``/``Go``, ``K8s``/``Kubernetes``); a numeronym
  (``i18n``); an acronym of three or more words (``AWS``/``Amazon Web Services``); a vendor
  prefix (``Apache Spark``/``Spark``); a packaging suffix (``Vue``/``Vue.js``, ``Mongo``/
  ``MongoDB``); a chunk context defining one by the other (``Google Kubernetes Engine (GKE)``);
* **review** — plausible, for a human to confirm: camel-case or two-letter acronyms
  (``JS``/``JavaScript`` when the table does not know it), forms the table lists under
  several entries (``ES``, ``TF``), near-identical spellings (rapidfuzz: typos, plurals),
  short vendor-stripped names, ``X (Y)``/``aka`` mentions in chunk contexts, and sure
  evidence between entities of incompatible types.

Guards keep false friends apart: a name that extends another with a real word (``Java``/
``JavaScript``, ``React``/``React Native``, ``Kafka``/``Kafka Streams``, ``Go``/``Google``)
or with a different version number is never folded by the heuristics; ``+`` and ``#``
count as letters (``C``, ``C++`` and ``C#`` stay distinct); ids are never used when a
name exists (``entity:c`` could be a slug of ``C++``); and the table's ``distinct`` pairs
are never clustered, even transitively. Only declared aliases and the table (curated
data) override the extension guard.

The canonical entity of a cluster is the fullest official name: a table entry's name,
else not an acronym, then the entity with more chunk links, then the longer name.
Results are deterministic (sorted by ids). No textual/rich import here.
"""
from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from itertools import combinations
from pathlib import Path
from typing import Any, Iterable

from rapidfuzz import fuzz
from rapidfuzz.distance import OSA

from ctxfst_tui.core.format.schema import OPERATIONAL_TYPES
from ctxfst_tui.core.text.stopwords import ACRONYM_SKIPPED_WORDS

TIERS = ("sure", "review")
NOISE_SUFFIXES = ("js", "lang", "db", "css")  # packaging suffixes: Vue/Vue.js, Go/Golang, Mongo/MongoDB
VENDOR_GROUPS = {
    "apache": "apache", "google": "google", "googlecloud": "google", "gcp": "google",
    "microsoft": "microsoft", "ms": "microsoft", "azure": "microsoft", "amazon": "amazon", "aws": "amazon",
    "amazonwebservices": "amazon", "oracle": "oracle", "ibm": "ibm", "meta": "meta", "facebook": "meta",
    "hashicorp": "hashicorp", "redhat": "redhat", "adobe": "adobe", "jetbrains": "jetbrains",
    "mozilla": "mozilla", "netflix": "netflix", "twitter": "twitter", "vmware": "vmware",
    "cloudflare": "cloudflare", "atlassian": "atlassian", "salesforce": "salesforce", "nvidia": "nvidia",
    "intel": "intel", "apple": "apple", "openai": "openai", "anthropic": "anthropic", "elastic": "elastic", "alibaba": "alibaba",
    "cisco": "cisco", "gnu": "gnu", "eclipse": "eclipse", "confluent": "confluent", "databricks": "databricks",
    "pivotal": "pivotal", "vercel": "vercel", "netlify": "netlify", "github": "github", "gitlab": "gitlab",
}
GENERIC_CORES = frozenset({
    "cloud", "functions", "function", "storage", "search", "analytics", "drive", "docs", "sheets", "maps",
    "pay", "mail", "calendar", "translate", "vision", "speech", "monitor", "monitoring", "logging", "logs",
    "container", "containers", "registry", "database", "sql", "dns", "cdn", "iam", "vpc", "lambda", "batch",
    "workflows", "pipelines", "devops", "compute", "network", "identity", "security", "backup", "queue",
    "streams", "stream", "events", "api", "apis", "gateway", "studio", "code", "cli", "sdk", "web", "app",
    "apps", "one", "home", "assistant", "chat", "notebooks", "ml", "ai", "data", "platform", "services",
})
_DIGITS = re.compile(r"\d+")
_NUMERONYM = re.compile(r"([a-z])(\d{1,2})([a-z])")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_WORD_SPLIT = re.compile(r"[\s\-_/.,:;&]+")
_PAREN = re.compile(
    r"(?P<a>[^\s(),;]+(?:\s+[^\s(),;]+){0,4}?)\s*\(\s*(?:aka\s+|a\.k\.a\.?\s+|also(?: known as)?\s+|or\s+|formerly\s+|i\.e\.?,?\s+|short for\s+|née\s+)?(?P<b>[^()]{1,48}?)\s*\)",
    re.IGNORECASE,
)
_AKA_WORDS = r"aka|a\.k\.a\.?|also known as|formerly(?: known as)?"  # "X aka Y", "X, formerly Y"
_AKA = re.compile(
    r"(?P<a>[^\s(),;]+(?:\s+[^\s(),;]+){0,4}?),?\s+(?:" + _AKA_WORDS + r")\s+(?P<b>[^\s(),;.]+(?:\s+[^\s(),;.]+){0,4})",
    re.IGNORECASE,
)
_AKA_MARKER = re.compile(_AKA_WORDS, re.IGNORECASE)  # a text without one cannot match _AKA: its scan is skipped

_NOT_ASCII_ALNUM = re.compile(r"[\x00-\x2f\x3a-\x60\x7b-\x7f]+")  # ASCII but not [0-9a-z]
_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f]+")

# ---------------------------------------------------------------- normalisation


def fingerprint(text: Any) -> str:
    """Case-, accent-, space- and punctuation-free key; ``+``/``#``/``&`` are spelled out so C, C++ and C# differ."""
    text = text if isinstance(text, str) else str(text)
    return _name_fingerprint(text) if len(text) <= 200 else _fingerprint(text)


def _fingerprint(text: str) -> str:
    """Only the non-ASCII runs are looked at character by character (a chunk text is mostly ASCII)."""
    if not text.isascii():
        s = _NON_ASCII_RUN.sub(_drop_combining, unicodedata.normalize("NFKD", text)).casefold()
    else:
        s = text.lower()  # NFKD and casefold change nothing in ASCII but case
    s = s.replace("+", " plus ").replace("#", " sharp ").replace("&", " and ")
    s = _NOT_ASCII_ALNUM.sub("", s)
    return s if s.isascii() else _NON_ASCII_RUN.sub(_keep_alnum, s)


_name_fingerprint = lru_cache(maxsize=100_000)(_fingerprint)  # names recur in thousands of places


def _drop_combining(m: re.Match) -> str:
    return "".join(ch for ch in m.group() if not unicodedata.combining(ch))


def _keep_alnum(m: re.Match) -> str:
    return "".join(ch for ch in m.group() if ch.isalnum())


def _words(text: str) -> list[str]:
    return [w for w in _WORD_SPLIT.split(text.strip()) if w]


def _camel_parts(text: str) -> list[str]:
    parts: list[str] = []
    for w in _words(text):
        parts.extend(_CAMEL.findall(w) or [w])
    return parts


def _vendor_splits(text: str) -> list[tuple[str, str]]:
    """(vendor group, rest) for each known vendor prefix of ``text`` ('Google Cloud Build' ->
    ('google', 'Build') and ('google', 'Cloud Build')); empty when there is none."""
    words = text.split()
    out = []
    for n in (3, 2, 1):
        if len(words) > n:
            key = fingerprint(" ".join(words[:n]))
            if key in VENDOR_GROUPS:
                out.append((VENDOR_GROUPS[key], " ".join(words[n:])))
    return out


def _looks_short(name: str) -> bool:
    """An acronym/numeronym-looking name (JS, GCP, K8s): a poor canonical choice."""
    fp = fingerprint(name)
    return len(fp) <= 5 and (name.isupper() or bool(_NUMERONYM.fullmatch(fp)) or sum(c.isupper() for c in name) >= 2)


# ---------------------------------------------------------------- curated table


@dataclass
class AliasTable:
    """The curated technology names: entries (name + aliases + former names) and distinct pairs."""

    entries: list[dict[str, Any]]
    distinct: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.index: dict[str, list[int]] = {}
        self.canonical: set[str] = set()
        for i, e in enumerate(self.entries):
            self.canonical.add(fingerprint(e["name"]))
            for form in self.forms(i):
                fp = fingerprint(form)
                if fp and i not in self.index.setdefault(fp, []):
                    self.index[fp].append(i)
        self.distinct_keys = {frozenset((fingerprint(a), fingerprint(b))) for a, b in self.distinct}

    def forms(self, i: int) -> list[str]:
        e = self.entries[i]
        return [e["name"], *e.get("aliases", []), *e.get("former", [])]

    def lookup(self, text: str) -> list[int]:
        return self.index.get(fingerprint(text), [])

    def is_former(self, i: int, text: str) -> bool:
        return fingerprint(text) in {fingerprint(f) for f in self.entries[i].get("former", [])}

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> "AliasTable":
        entries = [e for e in data.get("entries", []) if isinstance(e, dict) and isinstance(e.get("name"), str)]
        distinct = [(str(p[0]), str(p[1])) for p in data.get("distinct", []) if isinstance(p, (list, tuple)) and len(p) == 2]
        return cls(entries, distinct)

    @classmethod
    def load(cls, path: str | Path | None = None) -> "AliasTable":
        if path is None:
            text = resources.files("ctxfst_tui.core.entities.data").joinpath("tech_aliases.json").read_text("utf-8")
        else:
            text = Path(path).read_text("utf-8")
        return cls.from_data(json.loads(text))

    def without(self, names: Iterable[str], keep_distinct: bool = True) -> "AliasTable":
        """A copy without the entries holding any of ``names`` (for held-out evaluation)."""
        drop = {fingerprint(n) for n in names}
        entries = [e for i, e in enumerate(self.entries) if not drop & {fingerprint(f) for f in self.forms(i)}]
        return AliasTable(entries, list(self.distinct) if keep_distinct else [])


@lru_cache(maxsize=1)
def default_table() -> AliasTable:
    return AliasTable.load()


def _as_table(table: Any) -> AliasTable:
    if table is None:
        return default_table()
    if isinstance(table, AliasTable):
        return table
    if isinstance(table, dict):
        return AliasTable.from_data(table)
    if isinstance(table, (str, Path)):
        return AliasTable.load(table)
    raise TypeError(f"table must be an AliasTable, a dict, a path or None, not {type(table).__name__}")


# ---------------------------------------------------------------- results


@dataclass
class Cluster:
    tier: str  # "sure" | "review"
    canonical: str
    members: list[str]  # ids, canonical first
    reasons: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"tier": self.tier, "canonical": self.canonical, "members": list(self.members), "reasons": list(self.reasons)}


def clusters_to_json(clusters: list[Cluster]) -> dict[str, Any]:
    return {"clusters": [c.to_json() for c in clusters]}


# ---------------------------------------------------------------- entities


@dataclass
class _Ent:
    id: str
    name: str
    type: str | None
    aliases: list[str]
    links: int = 0
    neighbours: set[str] = field(default_factory=set)

    @property
    def forms(self) -> list[tuple[str, str]]:
        """(text, kind) for the name and each alias."""
        out = [(self.name, "name")]
        out.extend((a, "alias") for a in self.aliases)
        return out


def _id_slug(eid: str) -> str:
    return eid.rsplit(":", 1)[-1].replace("-", " ").replace("_", " ").strip() or eid


def _entities(entities: list[dict], chunks: list[dict] | None) -> list[_Ent]:
    by_id: dict[str, _Ent] = {}
    for d in entities:
        if not isinstance(d, dict) or not isinstance(d.get("id"), str):
            continue
        eid = d["id"]
        name = d.get("name")
        name = str(name).strip() if isinstance(name, (str, int, float)) and str(name).strip() else None
        aliases = d.get("aliases")
        aliases = [str(a).strip() for a in aliases if isinstance(a, (str, int, float)) and str(a).strip()] if isinstance(aliases, list) else []
        if eid in by_id:  # the same id declared in several documents: pool its aliases
            e = by_id[eid]
            for a in aliases + ([name] if name and fingerprint(name) != fingerprint(e.name) else []):
                if a not in e.aliases:
                    e.aliases.append(a)
            continue
        t = d.get("type")
        by_id[eid] = _Ent(eid, name or _id_slug(eid), t if isinstance(t, str) else None, list(dict.fromkeys(aliases)))
    for c in chunks or []:
        refs = c.get("entities") if isinstance(c, dict) else None
        if not isinstance(refs, list):
            continue
        ids = {r for r in refs if isinstance(r, str) and r in by_id}
        for r in ids:
            by_id[r].links += 1
            by_id[r].neighbours.update(ids - {r})
    return [by_id[k] for k in sorted(by_id)]


# ---------------------------------------------------------------- pair evidence


@dataclass
class _Edge:
    tier: str
    score: float
    reasons: list[str] = field(default_factory=list)
    curated: bool = False  # table or declared alias: overrides the extension guard


def _acronym_keys(long: str) -> dict[str, str]:
    """Initials ``long`` can be abbreviated to -> how ("words": of its words, "camel": of its camel-case parts)."""
    out: dict[str, str] = {}
    parts = _camel_parts(long)
    if len(parts) >= 2:
        out["".join(p[0] for p in parts).casefold()] = "camel"
    words = _words(long)
    if len(words) >= 2:
        variants = [words, [w for w in words if w.lower() not in ACRONYM_SKIPPED_WORDS]]
        for _, rest in _vendor_splits(long):
            variants.append([w for w in _words(rest) if w.lower() not in ACRONYM_SKIPPED_WORDS])
        for ws in variants:
            if len(ws) >= 2:
                out["".join(w[0] for w in ws).casefold()] = "words"
    return out


def acronym_of(short: str, long: str) -> str | None:
    """How ``short`` abbreviates ``long`` ("words" / "camel"), or None."""
    s = fingerprint(short)
    if not (2 <= len(s) <= 6) or not s.isalpha() or " " in short.strip() or len(fingerprint(long)) <= len(s) + 1:
        return None
    return _acronym_keys(long).get(s)


def _numeronym_key(long: str) -> tuple[str, int, str] | None:
    letters = "".join(ch for ch in fingerprint(long) if ch.isalpha())
    return (letters[0], len(letters) - 2, letters[-1]) if len(letters) >= 4 else None


def _phrase_abbreviation(short: str, long: str) -> bool:
    """``short`` abbreviates some words of ``long`` and repeats the others: 'VS Code' /
    'Visual Studio Code', 'K8s Operator' / 'Kubernetes Operator', 'GH Actions'."""
    s_tokens, words = _words(short), _words(long)
    if len(s_tokens) < 2 or len(words) < len(s_tokens):
        return False
    sf, wf = [fingerprint(t) for t in s_tokens], [fingerprint(w) for w in words]
    abbreviated = [False]

    def match(i: int, j: int) -> bool:
        if i == len(sf):
            return j == len(wf)
        if j == len(wf) or not sf[i]:
            return False
        if sf[i] == wf[j] and match(i + 1, j + 1):
            return True
        if _NUMERONYM.fullmatch(sf[i]) and numeronym_of(sf[i], wf[j]) and match(i + 1, j + 1):
            abbreviated[0] = True
            return True
        if sf[i].isalpha() and 2 <= len(sf[i]) <= 5:
            for r in range(2, min(len(sf[i]), len(wf) - j) + 1):
                if "".join(w[0] for w in wf[j:j + r]) == sf[i] and r == len(sf[i]) and match(i + 1, j + r):
                    abbreviated[0] = True
                    return True
        return False

    return match(0, 0) and abbreviated[0]


def numeronym_of(short: str, long: str) -> bool:
    m = _NUMERONYM.fullmatch(fingerprint(short))
    letters = "".join(ch for ch in fingerprint(long) if ch.isalpha())
    return bool(m) and int(m.group(2)) >= 2 and len(letters) - 2 == int(m.group(2)) and letters[0] == m.group(1) and letters[-1] == m.group(3)


def _extension(a: str, b: str) -> str | None:
    """The real word by which one fingerprint extends the other (Java/JavaScript -> 'script'), or None."""
    fa, fb = fingerprint(a), fingerprint(b)
    if fa == fb or not fa or not fb:
        return None
    short, long = (fa, fb) if len(fa) < len(fb) else (fb, fa)
    if long.startswith(short):
        rest = long[len(short):]
        return None if rest in NOISE_SUFFIXES or rest == "s" else rest
    if long.endswith(short):
        rest = long[: len(long) - len(short)]
        return None if rest in VENDOR_GROUPS or fingerprint(rest) in {"redhat", "googlecloud"} else rest
    return None


def _digits_differ(a: str, b: str) -> bool:
    da, db = _DIGITS.findall(a), _DIGITS.findall(b)
    return bool(da) and bool(db) and da != db


class _Pairs:
    def __init__(self, ents: list[_Ent], table: AliasTable):
        self.ents = {e.id: e for e in ents}
        self.table = table
        self.edges: dict[tuple[str, str], _Edge] = {}
        self._entries: dict[str, set[int]] = {}

    def add(self, a: str, b: str, tier: str, score: float, reason: str, curated: bool = False) -> None:
        if a == b:
            return
        key = (a, b) if a < b else (b, a)
        e = self.edges.get(key)
        if e is None:
            e = self.edges[key] = _Edge(tier, score)
        elif TIERS.index(tier) < TIERS.index(e.tier):
            e.tier = tier
        e.score = max(e.score, score)
        e.curated = e.curated or curated
        if reason not in e.reasons:
            e.reasons.append(reason)

    # ------------------------------------------------------------ guards
    def entries_of(self, eid: str) -> set[int]:
        """The table entries the entity's name belongs to (else its unambiguous aliases): what it *is*."""
        if eid not in self._entries:
            e = self.ents[eid]
            found = set(self.table.lookup(e.name))
            if not found:
                for a in e.aliases:
                    hits = self.table.lookup(a)
                    if len(hits) == 1:
                        found.update(hits)
            self._entries[eid] = found
        return self._entries[eid]

    def known_distinct(self, a: str, b: str) -> bool:
        ea, eb = self.entries_of(a), self.entries_of(b)
        return bool(ea and eb and not ea & eb)

    def distinct(self, a: str, b: str) -> bool:
        """A curated 'distinct' pair, matched on the names, aliases or table names of the two entities."""
        def keys(eid: str) -> set[str]:
            out = {fingerprint(t) for t, _ in self.ents[eid].forms}
            out.update(fingerprint(self.table.entries[i]["name"]) for t, _ in self.ents[eid].forms for i in self.table.lookup(t))
            return out

        ka, kb = keys(a), keys(b)
        return any(frozenset((x, y)) in self.table.distinct_keys for x in ka for y in kb)

    def guarded(self, a: str, b: str) -> str | None:
        """Why heuristics must not fold these two names, or None."""
        na, nb = self.ents[a].name, self.ents[b].name
        if self.known_distinct(a, b):
            return f"'{na}' and '{nb}' are different technologies in the curated table"
        if _digits_differ(na, nb):
            return f"'{na}' and '{nb}' carry different version numbers"
        ext = _extension(na, nb)
        if ext is not None:
            return f"'{na}' and '{nb}' differ by a word ('{ext}')"
        return None

    # ------------------------------------------------------------ evidence kinds
    def exact_forms(self) -> None:
        """Fingerprint collisions, declared aliases, vendor prefixes and packaging suffixes (dictionary joins)."""
        by_fp: dict[str, list[tuple[str, str, str]]] = {}
        by_core: dict[str, list[tuple[str, str, str, str | None]]] = {}
        for e in self.ents.values():
            for text, kind in e.forms:
                fp = fingerprint(text)
                if not fp:
                    continue
                by_fp.setdefault(fp, []).append((e.id, text, kind))
                for vendor, core in _vendor_splits(text):
                    if fingerprint(core):
                        by_core.setdefault(fingerprint(core), []).append((e.id, text, kind, vendor))
        for fp, hits in sorted(by_fp.items()):
            for (ia, ta, ka), (ib, tb, kb) in combinations(hits, 2):
                if ia == ib:
                    continue
                if ka == "name" and kb == "name":
                    self.add(ia, ib, "sure", 100, f"{ia} '{ta}' and {ib} '{tb}' differ only in case, punctuation or spacing")
                else:
                    (x, tx, kx), (y, ty, ky) = sorted([(ia, ta, ka), (ib, tb, kb)], key=lambda h: h[2] != "alias")
                    tier = "review" if _digits_differ(self.ents[ia].name, self.ents[ib].name) else "sure"
                    if ka == kb == "alias":  # two entities sharing an alias: weaker than an alias naming the other
                        if self.known_distinct(ia, ib):
                            continue  # 'ES' declared by both JavaScript and Elasticsearch
                        if self.guarded(ia, ib) or len(self.table.lookup(ta)) > 1:
                            tier = "review"
                    self.add(x, y, tier, 99, f"{x} declares the alias '{tx}', which is the {ky} '{ty}' of {y}", curated=True)
            # packaging suffixes: Vue / Vue.js, Go / Golang, Mongo / MongoDB
            for suffix in NOISE_SUFFIXES:
                if fp.endswith(suffix) and len(fp) > len(suffix) and fp[: -len(suffix)] in by_fp:
                    for ia, ta, _ in hits:
                        for ib, tb, _ in by_fp[fp[: -len(suffix)]]:
                            if ia != ib and not _digits_differ(ta, tb):
                                self.add(ia, ib, "sure", 95, f"{ia} '{ta}' is {ib} '{tb}' with the packaging suffix '{suffix}'")
        for core, hits in sorted(by_core.items()):
            plain = by_fp.get(core, [])
            for ia, ta, _, va in hits:
                for ib, tb, _ in plain:
                    if ia != ib:
                        tier = "sure" if len(core) >= 4 and core not in GENERIC_CORES else "review"
                        self.add(ia, ib, tier, 90, f"{ia} '{ta}' is {ib} '{tb}' with the vendor prefix")
            for (ia, ta, _, va), (ib, tb, _, vb) in combinations(hits, 2):
                if ia != ib and va == vb and fingerprint(ta) != fingerprint(tb):
                    self.add(ia, ib, "review", 85, f"{ia} '{ta}' and {ib} '{tb}' name the same product of one vendor")

    def curated_table(self) -> None:
        hits: dict[int, list[tuple[str, str]]] = {}
        for e in self.ents.values():
            for text, _ in e.forms:
                for i in self.table.lookup(text):
                    hits.setdefault(i, []).append((e.id, text))
        for i, found in sorted(hits.items()):
            canonical = self.table.entries[i]["name"]
            for (ia, ta), (ib, tb) in combinations(found, 2):
                if ia == ib or fingerprint(ta) == fingerprint(tb) or self.known_distinct(ia, ib):
                    continue
                ambiguous = [self.table.entries[j]["name"] for t in (ta, tb) for j in self.table.lookup(t) if j != i]
                former = [t for t in (ta, tb) if self.table.is_former(i, t)]
                what = f"a former name of '{canonical}'" if former else f"known names of '{canonical}'"
                reason = f"curated table: {ia} '{ta}' and {ib} '{tb}' are {what}"
                if ambiguous:
                    reason += f" (but '{ta if self.table.lookup(ta) != [i] else tb}' may also mean '{sorted(set(ambiguous))[0]}')"
                self.add(ia, ib, "review" if ambiguous else "sure", 97, reason, curated=not ambiguous)

    def abbreviations(self) -> None:
        """Numeronyms (K8s, i18n) and acronyms (AWS, JS) against every multi-letter form of another entity."""
        shorts = []
        for e in self.ents.values():
            for text, kind in e.forms:
                fp = fingerprint(text)
                if 2 <= len(fp) <= 6 and (kind == "alias" or sum(c.isupper() for c in text) >= 2 or _NUMERONYM.fullmatch(fp)):
                    shorts.append((e.id, text, kind))
        acronyms: dict[str, list[tuple[str, str, str]]] = {}
        numeronyms: dict[tuple[str, int, str], list[tuple[str, str]]] = {}
        for e in self.ents.values():
            for long, _ in e.forms:
                for key, how in _acronym_keys(long).items():
                    acronyms.setdefault(key, []).append((e.id, long, how))
                nk = _numeronym_key(long)
                if nk:
                    numeronyms.setdefault(nk, []).append((e.id, long))
        for ia, short, _ in shorts:
            fp = fingerprint(short)
            m = _NUMERONYM.fullmatch(fp)
            if m and int(m.group(2)) >= 2:
                for ib, long in numeronyms.get((m.group(1), int(m.group(2)), m.group(3)), []):
                    if ib != ia:
                        self.add(ia, ib, "sure", 96, f"{ia} '{short}' is a numeronym of {ib} '{long}'")
            if not fp.isalpha() or " " in short.strip():
                continue
            for ib, long, how in acronyms.get(fp, []):
                if ib == ia or len(fingerprint(long)) <= len(fp) + 1:
                    continue
                strong = how == "words" and len(fp) >= 3 and len(self.table.lookup(short)) < 2  # OCI, ANN: ambiguous
                self.add(ia, ib, "sure" if strong else "review", 80 if strong else 70,
                         f"{ia} '{short}' is an acronym of {ib} '{long}'" + ("" if strong else f" ({'camel-case' if how == 'camel' else 'two-letter'} initials)"))

    def phrases(self) -> None:
        """Multi-word forms with an abbreviated part ('VS Code' / 'Visual Studio Code'), joined on a shared word."""
        by_word: dict[str, set[tuple[str, str]]] = {}
        for e in self.ents.values():
            for text, _ in e.forms:
                for w in _words(text):
                    by_word.setdefault(fingerprint(w), set()).add((e.id, text))
        for e in self.ents.values():
            for short, _ in e.forms:
                tokens = _words(short)
                if len(tokens) < 2:
                    continue
                candidates = set().union(*(by_word.get(fingerprint(t), set()) for t in tokens))
                for ib, long in sorted(candidates):
                    if ib != e.id and _phrase_abbreviation(short, long):
                        self.add(e.id, ib, "review", 68, f"{e.id} '{short}' abbreviates part of {ib} '{long}'")

    def fuzzy(self) -> None:
        """Near-identical spellings (typos, plurals) with rapidfuzz; first letters and digits must agree."""
        items = sorted({(fingerprint(t), e.id, t) for e in self.ents.values() for t, _ in e.forms if len(fingerprint(t)) >= 5})
        buckets: dict[tuple[str, tuple[str, ...]], list[tuple[str, str, str]]] = {}
        for it in items:  # same first letter and same digits, or no match at all
            buckets.setdefault((it[0][0], tuple(_DIGITS.findall(it[0]))), []).append(it)
        for group in buckets.values():
            group.sort(key=lambda it: (len(it[0]), it))
            for x, (fa, ia, ta) in enumerate(group):
                for fb, ib, tb in group[x + 1:]:
                    if len(fb) - len(fa) > 2:
                        break
                    if ia == ib or fa == fb:
                        continue
                    self._fuzzy_pair(fa, ia, ta, fb, ib, tb)

    def _fuzzy_pair(self, fa: str, ia: str, ta: str, fb: str, ib: str, tb: str) -> None:
        short, long = (fa, fb) if len(fa) <= len(fb) else (fb, fa)
        if long == short + "s" and len(short) >= 4:
            self.add(ia, ib, "review", 75, f"{ia} '{ta}' and {ib} '{tb}' differ by a plural 's'")
            return
        if short in long:
            return
        ratio = fuzz.ratio(fa, fb, score_cutoff=80)
        if not ratio:
            return
        dist = OSA.distance(fa, fb)
        n = len(short)
        close = (n >= 6 and dist <= 1) or (n >= 9 and dist <= 2) or (n >= 8 and ratio >= 90)
        if not close:  # co-mention evidence lowers the bar
            ea, eb = self.ents[ia], self.ents[ib]
            close = bool(ib in ea.neighbours or ea.neighbours & eb.neighbours)
        if close:
            self.add(ia, ib, "review", ratio * 0.8,
                     f"{ia} '{ta}' and {ib} '{tb}' are spelled almost alike (rapidfuzz ratio {ratio:.0f}, {dist} edit{'s' if dist != 1 else ''})")

    def co_mentions(self, chunks: list[dict] | None) -> None:
        """Chunk contexts that define one name by another: 'Google Kubernetes Engine (GKE)', 'X aka Y'."""
        if not chunks:
            return
        forms: dict[str, set[str]] = {}
        for e in self.ents.values():
            for text, _ in e.forms:
                if fingerprint(text):
                    forms.setdefault(fingerprint(text), set()).add(e.id)
        for c in chunks:
            if not isinstance(c, dict):
                continue
            cid = c.get("id", "?")
            for key in ("context", "content", "summary"):
                text = c.get(key)
                if not isinstance(text, str):
                    continue
                # each pattern needs its marker: most texts have neither, and skip the scans
                for rx in ((_PAREN,) if "(" in text else ()) + ((_AKA,) if _AKA_MARKER.search(text) else ()):
                    for m in rx.finditer(text):
                        b = m.group("b").strip()
                        ids_b = forms.get(fingerprint(b), set())
                        if not ids_b:
                            continue
                        words = m.group("a").split()
                        for k in range(len(words), 0, -1):
                            a = " ".join(words[-k:])
                            ids_a = forms.get(fingerprint(a), set())
                            if ids_a:
                                for ia in sorted(ids_a):
                                    for ib in sorted(ids_b - {ia}):
                                        defined = acronym_of(b, a) or numeronym_of(b, a) or acronym_of(a, b) or numeronym_of(a, b)
                                        self.add(ia, ib, "sure" if defined else "review", 88 if defined else 72,
                                                 f"chunk {cid} writes '{m.group(0).strip()}'", curated=False)
                                break

    def finish(self) -> None:
        """Apply guards and type checks to the evidence; annotate co-linking."""
        for (a, b), e in list(self.edges.items()):
            if self.distinct(a, b):
                del self.edges[(a, b)]
                continue
            why = None if e.curated else self.guarded(a, b)
            if why is not None:
                del self.edges[(a, b)]
                continue
            ta, tb = self.ents[a].type, self.ents[b].type
            if ta and tb and ta != tb:
                if (ta in OPERATIONAL_TYPES or tb in OPERATIONAL_TYPES) and e.tier == "sure":
                    e.tier = "review"
                    e.reasons.append(f"types differ ({a} is a {ta}, {b} a {tb}): confirm before merging")
                else:
                    e.reasons.append(f"types differ ({ta} / {tb})")
            ea, eb = self.ents[a], self.ents[b]
            together = b in ea.neighbours
            shared = sorted(ea.neighbours & eb.neighbours)
            if together:
                e.reasons.append(f"co-mentioned: {a} and {b} are linked from a chunk they share")
            elif shared:
                e.reasons.append(f"co-mentioned: both appear in chunks with {', '.join(shared[:3])}")


# ---------------------------------------------------------------- clustering


class _UF:
    def __init__(self, ids: Iterable[str]):
        self.parent = {i: i for i in ids}
        self.members = {i: {i} for i in self.parent}

    def find(self, x: str) -> str:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        if ra > rb:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.members[ra] |= self.members.pop(rb)

    def copy(self) -> "_UF":
        uf = _UF([])
        uf.parent = dict(self.parent)
        uf.members = {k: set(v) for k, v in self.members.items()}
        return uf


def _cluster(pairs: _Pairs, ents: list[_Ent]) -> list[Cluster]:
    """Sure clusters: single linkage over sure edges. Review clusters: sure clusters joined by
    review edges when at least half of the cross pairs have direct evidence (so an ambiguous
    form such as 'ES' does not chain Elasticsearch to JavaScript); a review edge left between
    two groups becomes its own review suggestion. No cluster holds a blocked pair."""
    ids = [e.id for e in ents]

    def blocked(x: str, y: str) -> bool:
        key = (x, y) if x < y else (y, x)
        return pairs.distinct(x, y) or (key not in pairs.edges and pairs.guarded(x, y) is not None)

    def linked(x: str, y: str) -> bool:
        return ((x, y) if x < y else (y, x)) in pairs.edges

    def run(uf: _UF, tiers: tuple[str, ...], linkage: float) -> None:
        order = sorted(((k, e) for k, e in pairs.edges.items() if e.tier in tiers), key=lambda kv: (TIERS.index(kv[1].tier), -kv[1].score, kv[0]))
        for (a, b), _ in order:
            ra, rb = uf.find(a), uf.find(b)
            if ra == rb:
                continue
            ma, mb = uf.members[ra], uf.members[rb]
            if any(blocked(x, y) for x in ma for y in mb):
                continue
            if linkage and sum(linked(x, y) for x in ma for y in mb) < linkage * len(ma) * len(mb):
                continue
            uf.union(a, b)

    sure_uf = _UF(ids)
    run(sure_uf, ("sure",), 0.0)
    all_uf = sure_uf.copy()
    run(all_uf, TIERS, 0.5)
    groups: dict[frozenset, str] = {}
    for m in sure_uf.members.values():
        if len(m) > 1:
            groups[frozenset(m)] = "sure"
    for m in all_uf.members.values():
        if len(m) > 1:
            groups.setdefault(frozenset(m), "review")
    for (a, b), e in sorted(pairs.edges.items()):
        if all_uf.find(a) != all_uf.find(b):
            group = frozenset(sure_uf.members[sure_uf.find(a)] | sure_uf.members[sure_uf.find(b)])
            if any(blocked(x, y) for x, y in combinations(sorted(group), 2)):
                group = frozenset((a, b))
            groups.setdefault(group, "review")
    out = [_make_cluster(tier, group, pairs) for group, tier in groups.items()]
    out.sort(key=lambda c: (TIERS.index(c.tier), c.canonical, c.members))
    return out


def _canonical(group: Iterable[str], pairs: _Pairs) -> tuple[str, str]:
    def key(eid: str) -> tuple:
        e = pairs.ents[eid]
        official = fingerprint(e.name) in pairs.table.canonical
        letters = sum(ch.isalnum() for ch in e.name)
        return (not official, _looks_short(e.name), -e.links, -letters, eid)

    best = min(group, key=key)
    e = pairs.ents[best]
    why = []
    if fingerprint(e.name) in pairs.table.canonical:
        why.append(f"'{e.name}' is the official name")
    else:
        why.append(f"'{e.name}' is the fullest name")
    if e.links:
        why.append(f"{e.links} chunk link{'s' if e.links != 1 else ''}")
    return best, f"canonical {best}: " + ", ".join(why)


def _make_cluster(tier: str, group: frozenset, pairs: _Pairs) -> Cluster:
    canonical, why = _canonical(group, pairs)
    members = [canonical] + sorted(group - {canonical})
    reasons = [why]
    for a, b in combinations(sorted(group), 2):
        e = pairs.edges.get((a, b))
        if e is not None:
            reasons.extend(e.reasons)
    return Cluster(tier, canonical, members, list(dict.fromkeys(reasons)))


def suggest_clusters(entities: list[dict], chunks: list[dict] | None = None, table: Any = None) -> list[Cluster]:
    """Clusters of entities that likely name the same thing: ``sure`` ones first, then ``review``.

    ``entities``: frontmatter-like dicts (id, name, type, aliases); the same id may appear
    several times (declared in several documents). ``chunks``: frontmatter chunk dicts
    (``entities`` links count toward the canonical choice; ``context`` is scanned for
    'X (Y)' / 'X aka Y'). ``table``: an :class:`AliasTable`, its JSON dict, a path, or None
    for the shipped ``data/tech_aliases.json``. A ``review`` cluster may contain the
    members of a ``sure`` one (the larger group is for a human to confirm).
    """
    ents = _entities(entities, chunks)
    pairs = _Pairs(ents, _as_table(table))
    pairs.exact_forms()
    pairs.curated_table()
    pairs.abbreviations()
    pairs.phrases()
    pairs.fuzzy()
    pairs.co_mentions(chunks)
    pairs.finish()
    return _cluster(pairs, ents)
