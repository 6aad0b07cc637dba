"""Entity suggestions: candidate entities for a document, and the chunk links they imply.

Two sources feed the candidates:

* a deterministic pass over each chunk: known technology names (the curated alias table
  ``data/tech_aliases.json`` plus a few common tools it lacks), camel-case and capitalised
  multi-word names, capitalised names inside sentences, programs of inline-code commands
  (``helm upgrade ...`` -> Helm), code identifiers (``pg_upgrade``, ``allkeys-lru``) and
  acronyms defined in the text (``Google Kubernetes Engine (GKE)``);
* optionally a model (any :class:`~ctxfst_tui.core.llm.Backend`), asked per chunk with a
  few-shot prompt; a model candidate is kept only when it occurs in the chunk (small models
  invent names).

Candidates are normalised to a canonical name (the table's official name, else the spelling
used in the text), an ``entity:kebab-case`` id and a CtxFST type (:data:`ENTITY_TYPES`);
generic words (system, project, tool, data, ...) are dropped; a candidate that is an existing
entity (same name or alias, or the same table entry: ``K8s`` -> ``entity:kubernetes``) is not
duplicated — only its missing chunk links are proposed.

:func:`extract_entities` returns :class:`Proposals` and never writes;
:func:`apply_proposals` appends the chosen entities and adds the chunk links with minimal
diffs and returns an :class:`~ctxfst_tui.core.workspace.undo.UndoRecord`.
"""
from __future__ import annotations

import re
import threading
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ctxfst_tui.core.entities.aliases import AliasTable, default_table, fingerprint
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.format.schema import CHUNK_LINK_FIELD, ENTITY_TYPES, OPERATIONAL_TYPES
from ctxfst_tui.core.workspace.undo import DocChange, UndoRecord
from ctxfst_tui.core.llm.base import Cancelled, ModelError

GENERIC_WORDS = frozenset("""
system systems project projects tool tools data service services app apps application applications team teams
process processes file files code user users value values thing things example examples feature features version
versions step steps part parts way ways time times number numbers name names list lists server servers client
clients information content document documents section sections chunk chunks note notes error errors issue issues
problem problems function functions method methods module modules package packages library libraries framework
frameworks platform platforms api config configuration configurations setting settings option options test tests
build builds release releases state states action actions goal goals production environment environments page
pages model models type types key keys output input result results task tasks job jobs work pipeline pipelines
image images main master default true false null none yes no new old run runs use uses usage set get put post
update updates change changes store stores support level levels mode modes table tables field fields item items
object objects class classes interface interfaces component components folder folders path paths line lines
text texts word words question questions answer answers summary overview introduction conclusion background
guide guides manual notes readme todo note important warning tip info step one two three first second last next
monday tuesday wednesday thursday friday saturday sunday january february march april may june july august
september october november december
""".split())
SENTENCE_STARTERS = frozenset("""
the a an this that these those every each all any some no not never always when while if then after before
once since until as at by for from in into of on onto over per to under with without within and or but so
it its they their there here we our you your he she his her my i is are was were be been being do does did
how why what which who whom where shared untyped
""".split())
LEADING_DROP = frozenset({"the", "a", "an", "this", "that", "our", "your", "their", "its", "every", "each"})

# CtxFST types of the alias table's entries (and of a few well-known tools it lacks); by rule otherwise.
_TYPE_GROUPS: dict[str, str] = {
    "skill": "JavaScript|TypeScript|Python|Go|Rust|C++|C#|F#|Objective-C|Kotlin|PHP|Visual Basic .NET|Visual Basic for Applications|"
             "Bash|PowerShell|Julia|Clojure|SQL|HTML|CSS|Sass|WebAssembly|Java|Ruby|Swift|Scala|R|Perl|Lua|Haskell|Elixir|Dart",
    "protocol": "YAML|JSON|XML|Markdown|GraphQL|Protocol Buffers|Hypertext Transfer Protocol|Transport Layer Security|"
                "Domain Name System|Transmission Control Protocol|User Datagram Protocol|Message Queuing Telemetry Transport|"
                "Advanced Message Queuing Protocol|Simple Mail Transfer Protocol|Server-Sent Events|Remote Procedure Call|"
                "Simple Object Access Protocol|JSON Web Token|OAuth 2.0|OpenID Connect|Secure Shell|Language Server Protocol|"
                "Model Context Protocol|gRPC|WebSocket",
    "framework": "React|React Native|Vue.js|Angular|AngularJS|Next.js|Nuxt|Express|NestJS|Ember.js|Backbone.js|Tailwind CSS|"
                 "Bootstrap|Material UI|Gatsby|Electron|Spring Framework|Spring Boot|ASP.NET Core|Ruby on Rails|TensorFlow|"
                 "PyTorch|Django|Flask|FastAPI|Svelte|Textual",
    "library": "D3.js|Three.js|Chart.js|Socket.IO|scikit-learn|NumPy|pandas|Matplotlib|SQLAlchemy|Entity Framework|"
               "Hugging Face Transformers|Apache Lucene|Apache Arrow|jQuery|Lodash",
    "tool": "Babel|Vite|npm|Gunicorn|pytest|Homebrew|Advanced Package Tool|GNU Compiler Collection|LLVM|GNU Make|Apache Maven|"
            "Docker Compose|Terraform|Ansible|HashiCorp Packer|Vim|Neovim|Visual Studio Code|IntelliJ IDEA|Jupyter Notebook|"
            "llama.cpp|GitHub Actions|GitLab CI/CD|Argo CD|Flux|AWS CloudFormation|AWS Cloud Development Kit|Apache Airflow|"
            "OpenTelemetry|Docker|Git|Helm|kubectl|Podman|Jenkins|Prometheus|Grafana|Webpack|Yarn|pnpm|pip|Poetry|Gradle|"
            "CMake|curl|PgBouncer|Nginx Ingress|Kustomize|Packer|Vagrant|Bazel",
    "database": "PostgreSQL|Microsoft SQL Server|MongoDB|Redis|Elasticsearch|OpenSearch|SQLite|Amazon DynamoDB|Google BigQuery|"
                "Amazon Redshift|CockroachDB|Oracle Database|Amazon Aurora|InfluxDB|Memcached|Amazon RDS|Azure Cosmos DB|"
                "Google Cloud Spanner|Cloud Firestore|TimescaleDB|Apache Cassandra|Apache CouchDB|Apache Hive|Apache Solr|MySQL|"
                "MariaDB|ClickHouse|Neo4j",
    "platform": "Kubernetes|Amazon Web Services|Google Cloud Platform|Microsoft Azure|Linux|macOS|iOS|Microsoft Windows|Node.js|"
                ".NET|Java Virtual Machine|Java Development Kit|Apache Spark|Apache Kafka|Apache Flink|Apache Hadoop|"
                "Hadoop Distributed File System|Apache HTTP Server|Apache Tomcat|Apache ZooKeeper|Apache Beam|Apache Superset|"
                "Apache Pulsar|Apache NiFi|RabbitMQ|Apache ActiveMQ|Red Hat OpenShift|Red Hat Enterprise Linux|"
                "Windows Subsystem for Linux|NGINX|Envoy|GitHub|Hugging Face|HashiCorp Vault|HashiCorp Consul|HashiCorp Nomad|"
                "Elastic Stack|Python Package Index|Oracle Cloud Infrastructure|Compute Unified Device Architecture|Android|GitLab",
    "product": "Jira|Confluence|Microsoft Teams|Microsoft Excel|Microsoft Power BI|Salesforce|Llama|Slack|PagerDuty|Figma|Notion",
    "architecture": "REST|Model-View-Controller|Single-Page Application|Server-Side Rendering|Progressive Web App|"
                    "Service-Oriented Architecture|Event-Driven Architecture|Command Query Responsibility Segregation|"
                    "Domain-Driven Design|Microservices|Infrastructure as Code",
    "domain": "Machine Learning|Artificial Intelligence|Deep Learning|Natural Language Processing|Reinforcement Learning|"
              "Site Reliability Engineering|Search Engine Optimization|Quality Assurance|Observability|Accessibility|"
              "Internationalization|Localization|Customer Relationship Management|Enterprise Resource Planning",
}
TYPE_OF: dict[str, str] = {fingerprint(n): t for t, names in _TYPE_GROUPS.items() for n in names.split("|")}
EXTRA_KNOWN: dict[str, list[str]] = {  # common tools the alias table does not list: name -> aliases
    "Docker": [], "Git": [], "Helm": [], "kubectl": [], "Podman": [], "Jenkins": [], "Prometheus": [], "Grafana": [],
    "Webpack": [], "Yarn": [], "pnpm": [], "Poetry": [], "Gradle": [], "CMake": [], "PgBouncer": [], "Kustomize": [],
    "Vagrant": [], "Bazel": [], "MySQL": [], "MariaDB": [], "ClickHouse": [], "Neo4j": [], "Django": [], "Flask": [],
    "FastAPI": [], "Svelte": [], "Java": [], "Swift": [], "Scala": [], "Android": [], "Slack": [], "PagerDuty": [],
    "gRPC": [], "WebSocket": ["WebSockets"], "GitLab": [], "jQuery": [], "Textual": [],
}
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}\s")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+#_/-]*[A-Za-z0-9+#]|[A-Za-z0-9]")
_CAMEL = re.compile(r"^(?:[A-Z]?[a-z0-9]+[A-Z][A-Za-z0-9]*|[A-Z]{2,}[a-z][A-Za-z0-9]*|[a-z]+[A-Z][A-Za-z0-9]*)$")
_ACRONYM = re.compile(r"^[A-Z][A-Z0-9]{1,5}s?$")
_DEFINED = re.compile(r"\b((?:[A-Z][\w.+#-]*\s+){1,6}?[A-Z][\w.+#-]*)\s*\(\s*([A-Z][A-Za-z0-9.&+-]{1,9})\s*\)")
_IDENT = re.compile(r"^[A-Za-z_.-][A-Za-z0-9_.:/-]*[A-Za-z0-9]$")


# ---------------------------------------------------------------- results


@dataclass
class EntityProposal:
    """One entity the document discusses: new (``existing`` None) or an existing one to link more."""

    id: str
    name: str
    type: str
    aliases: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # known | camel | capitalised | command | code | defined | model
    chunks: list[str] = field(default_factory=list)  # chunks that mention it
    existing: str | None = None
    forms: list[str] = field(default_factory=list)  # spellings seen in the text

    @property
    def new(self) -> bool:
        return self.existing is None

    def to_entity(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "type": self.type, "aliases": list(self.aliases)}

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "type": self.type, "aliases": list(self.aliases),
                "sources": list(self.sources), "chunks": list(self.chunks), "existing": self.existing,
                "forms": list(self.forms)}


@dataclass
class ChunkLink:
    chunk_id: str
    entity_id: str
    evidence: str  # the spelling found in the chunk

    def to_json(self) -> dict[str, str]:
        return {"chunk": self.chunk_id, "entity": self.entity_id, "evidence": self.evidence}


@dataclass
class Proposals:
    """What :func:`extract_entities` suggests; nothing is written until :func:`apply_proposals`."""

    document: str
    entities: list[EntityProposal] = field(default_factory=list)  # new entities
    matched: list[EntityProposal] = field(default_factory=list)  # existing entities found in the text
    links: list[ChunkLink] = field(default_factory=list)  # chunk links to add
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (candidate, why)
    model_calls: int = 0
    model_errors: list[str] = field(default_factory=list)
    cancelled: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "document": self.document,
            "entities": [e.to_json() for e in self.entities],
            "matched": [e.to_json() for e in self.matched],
            "links": [link.to_json() for link in self.links],
            "dropped": [{"candidate": c, "reason": r} for c, r in self.dropped],
            "model_calls": self.model_calls, "model_errors": list(self.model_errors), "cancelled": self.cancelled,
        }

    def summary(self) -> str:
        return (f"{self.document}: {len(self.entities)} new entit{'y' if len(self.entities) == 1 else 'ies'}, "
                f"{len(self.matched)} existing matched, {len(self.links)} chunk link{'s' if len(self.links) != 1 else ''} proposed")


# ---------------------------------------------------------------- normalisation


def kebab(text: str) -> str:
    """``entity:`` id slug: 'Google Kubernetes Engine' -> 'google-kubernetes-engine', 'C++' -> 'c-plus-plus'."""
    s = unicodedata.normalize("NFKD", text)
    s = "".join(ch for ch in s if not unicodedata.combining(ch)).casefold()
    s = s.replace("++", " plus plus ").replace("+", " plus ").replace("#", " sharp ").replace("&", " and ")
    s = re.sub(r"^\.", "dot ", s)
    s = re.sub(r"[^a-z0-9]+", "-", s).strip("-")
    return s or "entity"


def entity_id(name: str) -> str:
    return "entity:" + kebab(name)


def _is_generic(text: str) -> bool:
    words = [w for w in re.split(r"[\s_/-]+", text.casefold()) if w]
    return not words or all(w in GENERIC_WORDS or w in SENTENCE_STARTERS for w in words)


class _Known:
    """Known names: the alias table plus :data:`EXTRA_KNOWN`, looked up by fingerprint."""

    def __init__(self, table: AliasTable):
        self.table = table
        self.extra = {fingerprint(n): n for n in EXTRA_KNOWN}
        for n, aliases in EXTRA_KNOWN.items():
            for a in aliases:
                self.extra[fingerprint(a)] = n
        self.max_words = 1
        for i in range(len(table.entries)):
            for f in table.forms(i):
                self.max_words = max(self.max_words, min(6, len(f.split())))
        self.forms_exact: dict[str, set[str]] = {}
        for i in range(len(table.entries)):
            for f in table.forms(i):
                self.forms_exact.setdefault(fingerprint(f), set()).add(f)
        for n, aliases in EXTRA_KNOWN.items():
            for f in [n, *aliases]:
                self.forms_exact.setdefault(fingerprint(f), set()).add(f)

    def canonical(self, text: str) -> str | None:
        """The official name of ``text`` when it is a known form (an unambiguous one)."""
        fp = fingerprint(text)
        if not fp:
            return None
        hits = self.table.lookup(text)
        if len(hits) == 1:
            return self.table.entries[hits[0]]["name"]
        if len(hits) > 1:
            return None
        return self.extra.get(fp)

    def accepts(self, surface: str, sentence_start: bool, in_code: bool) -> bool:
        """Whether this spelling in the text is really the known name (guards for short and common words)."""
        forms = self.forms_exact.get(fingerprint(surface), set())
        if not forms:
            return False
        letters = sum(ch.isalpha() for ch in surface)
        if surface in forms:
            if letters <= 2 and sentence_start and not in_code:
                return False  # "Go to the page"
            return True
        if in_code:
            return True  # `helm`, `kubectl`
        if surface.islower() and any(not f.islower() for f in forms):
            return False  # 'rust' the word, 'go' the verb
        return letters >= 4


def _type_for(name: str, known: str | None, model_type: str | None, source: str) -> str:
    for key in (known, name):
        if key and fingerprint(key) in TYPE_OF:
            return TYPE_OF[fingerprint(key)]
    if model_type in ENTITY_TYPES and model_type not in OPERATIONAL_TYPES:
        return model_type
    low = name.casefold()
    if re.search(r"\b(protocol|http|tcp|udp)\b", low):
        return "protocol"
    if re.search(r"(database|\bdb\b|sql)", low):
        return "database"
    if re.search(r"\barchitecture\b|\bpattern\b", low):
        return "architecture"
    if low.endswith(".js"):
        return "framework"
    if re.match(r"^(amazon|aws|google|azure|microsoft azure)\b", low):
        return "platform"
    if source == "command":
        return "tool"
    return "concept"


# ---------------------------------------------------------------- deterministic pass


@dataclass
class _Cand:
    surface: str
    source: str
    model_type: str | None = None
    alias: str | None = None  # an acronym defined beside it


def _prose_lines(text: str) -> tuple[list[str], list[str]]:
    """(paragraphs outside fenced code — wrapped lines joined, headings and list items on their
    own —, inline code spans of the prose)."""
    paras: list[str] = []
    spans: list[str] = []
    cur: list[str] = []
    fence: str | None = None

    def flush() -> None:
        if cur:
            paras.append(" ".join(cur))
            cur.clear()

    for line in text.splitlines():
        m = _FENCE.match(line)
        if m:
            flush()
            run = m.group(1)
            if fence is None:
                fence = run
            elif run[0] == fence[0] and len(run) >= len(fence):
                fence = None
            continue
        if fence is not None:
            continue
        spans.extend(s.group(2).strip() for s in _CODE_SPAN.finditer(line))
        stripped = line.strip()
        if not stripped:
            flush()
        elif _HEADING_LINE.match(line):
            flush()
            paras.append(line)
        elif re.match(r"^\s*(?:[-*+]|\d+[.)])\s+|^\s*\|", line):
            flush()
            cur.append(line)
        else:
            cur.append(stripped)
    flush()
    return paras, spans


def _sentence_tokens(line: str) -> list[tuple[str, bool]]:
    """(token, starts a sentence) of a prose paragraph, code spans removed."""
    line = _CODE_SPAN.sub(" , ", line)
    line = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", line)  # list markers
    line = re.sub(r"^\s*#{1,6}\s+", "", line)
    line = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", line)  # links
    out: list[tuple[str, bool]] = []
    start = True
    for m in re.finditer(r"[A-Za-z0-9][A-Za-z0-9.+#_/'-]*|[.!?:;,()\"|]", line):
        tok = m.group(0)
        if tok in ".!?:|":
            start = True
            out.append((tok, False))
            continue
        if tok in ";,()\"":
            out.append((tok, False))
            continue
        ends = tok.endswith(".") and not re.search(r"\.[a-z]{1,3}\.$", tok)  # "registry." ends a sentence, "e.g." does not
        tok = tok.rstrip(".'")
        if not tok:
            continue
        out.append((tok, start))
        start = ends
    return out


def _command_program(span: str) -> str | None:
    """The program of an inline command (`helm upgrade --install x`): its first word."""
    parts = span.split()
    if len(parts) < 2 or not re.match(r"^[a-z][a-z0-9_-]{1,20}$", parts[0]):
        return None
    if parts[0] in ("sudo", "env") and len(parts) > 2:
        return parts[1] if re.match(r"^[a-z][a-z0-9_-]{1,20}$", parts[1]) else None
    return parts[0]


def deterministic_candidates(text: str, known: _Known | None = None) -> list[_Cand]:
    """Candidates found without a model, in order of appearance."""
    known = known or _Known(default_table())
    lines, spans = _prose_lines(text)
    out: list[_Cand] = []
    for line in lines:
        heading = bool(_HEADING_LINE.match(line))
        toks = _sentence_tokens(line)
        words = [(t, s) for t, s in toks]
        i = 0
        while i < len(words):
            tok, start = words[i]
            if not re.match(r"[A-Za-z0-9]", tok):
                i += 1
                continue
            # longest known name starting here
            hit = None
            for n in range(min(known.max_words, len(words) - i), 0, -1):
                seq = words[i:i + n]
                if any(not re.match(r"[A-Za-z0-9]", t) for t, _ in seq):
                    continue
                surface = " ".join(t for t, _ in seq)
                if known.canonical(surface) and known.accepts(surface, start, False):
                    hit = (surface, n)
                    break
            if hit:
                out.append(_Cand(hit[0], "known"))
                i += hit[1]
                continue
            # capitalised run (2+ words), or a camel-case / capitalised word inside a sentence
            if tok[:1].isupper() and start and not _CAMEL.match(tok) and not _ACRONYM.match(tok):
                i += 1  # capitalised because it starts a sentence
                continue
            if tok[:1].isupper():
                j = i
                run = []
                while j < len(words) and words[j][0][:1].isupper() and re.match(r"[A-Za-z0-9]", words[j][0]) and (j == i or not words[j][1]):
                    run.append(words[j][0])
                    j += 1
                while run and run[0].casefold() in LEADING_DROP:
                    run.pop(0)
                if len(run) >= 2 and not heading and not (start and run[0].casefold() in SENTENCE_STARTERS):
                    out.append(_Cand(" ".join(run), "capitalised"))
                    i = j
                    continue
                if _CAMEL.match(tok) and not _ACRONYM.match(tok):
                    out.append(_Cand(tok, "camel"))
                elif not start and not heading and len(tok) >= 3 and not _ACRONYM.match(tok) and tok.casefold() not in SENTENCE_STARTERS:
                    out.append(_Cand(tok, "capitalised"))
                i = j if j > i else i + 1
                continue
            if _CAMEL.match(tok):
                out.append(_Cand(tok, "camel"))
            i += 1
        for m in _DEFINED.finditer(_CODE_SPAN.sub(" ", line)):
            long, short = m.group(1).strip(), m.group(2).strip()
            words_long = long.split()
            # keep the trailing words of `long` whose initials spell the acronym
            letters = re.sub(r"[^A-Z]", "", short.upper())
            if 2 <= len(letters) <= len(words_long):
                tail = words_long[-len(letters):]
                if "".join(w[0].upper() for w in tail) == letters:
                    long = " ".join(tail)
            out.append(_Cand(long, "defined", alias=short))
    for span in spans:
        prog = _command_program(span)
        if prog:
            out.append(_Cand(prog, "command"))
            continue
        if " " in span or len(span) < 4 or len(span) > 40:
            continue
        if known.canonical(span) and known.accepts(span, False, True):
            out.append(_Cand(span, "known"))
        elif _IDENT.match(span) and re.search(r"[_.:/-]|\d|[A-Z]", span[1:]) and not span.startswith("-"):
            out.append(_Cand(span, "code"))
    return out


def exact_terms(text: str, limit: int = 12) -> list[str]:
    """Exact terms of a chunk for a retrieval note's ``Terms:`` line: code spans (commands,
    keys, identifiers), known technology names, camel-case names and acronyms, in order."""
    known = _Known(default_table())
    lines, spans = _prose_lines(text)
    out: list[str] = []
    seen: set[str] = set()

    def add(t: str, code: bool = False) -> None:
        t = t.strip().rstrip(",;.")
        k = t.casefold()
        if t and k not in seen and len(t) <= 60 and (code or not _is_generic(t)):
            seen.add(k)
            out.append(t)

    for span in spans:
        if 2 <= len(span) <= 60:
            add(span, code=True)
    for c in deterministic_candidates(text, known):
        if c.source in ("known", "camel", "defined", "capitalised") and (c.source != "capitalised" or " " in c.surface):
            add(c.surface if c.source != "defined" else f"{c.alias} ({c.surface})")
    for line in lines:
        for tok, _ in _sentence_tokens(line):
            if _ACRONYM.match(tok) and len(tok) >= 2:
                add(tok)
    return out[:limit]


# ---------------------------------------------------------------- the model pass

ENTITY_FEWSHOT = """Named things in a text: products, tools, languages, databases, protocols, platforms.

Text: Deploy the API with Terraform and keep sessions in Redis. Alerts go to PagerDuty.
Entities: Terraform (tool); Redis (database); PagerDuty (product)
###
Text: The mobile app is written in Kotlin and talks to the backend over gRPC.
Entities: Kotlin (skill); gRPC (protocol)
###
Text: {chunk}
Entities:"""
_MODEL_ITEM = re.compile(r"^\s*(?P<name>[^()]+?)\s*(?:\((?P<type>[a-z]+)\))?\s*$")


def _model_candidates(backend: Any, chunk_text: str, cancel: threading.Event | None, max_tokens: int) -> tuple[list[_Cand], bool]:
    """(candidates named by the model, whether a real model call was made)."""
    line = " ".join(chunk_text.split())[:1500]
    prompt = ENTITY_FEWSHOT.replace("{chunk}", line)
    c = backend.complete(prompt, max_tokens=max_tokens, stop=["###", "\n"], temperature=0.0, cancel=cancel)
    out = []
    for item in c.text.split(";"):
        m = _MODEL_ITEM.match(item.strip().strip("."))
        if m and m.group("name").strip():
            out.append(_Cand(m.group("name").strip(), "model", m.group("type")))
    return out, not c.cached


# ---------------------------------------------------------------- extraction


def _mentions(form: str, text: str) -> bool:
    if not form.strip():
        return False
    flags = 0 if sum(ch.isalpha() for ch in form) <= 3 else re.IGNORECASE
    return re.search(r"(?<![\w.+#-])" + re.escape(form) + r"(?![\w+#]|-\w)", text, flags) is not None


def extract_entities(
    doc: Document,
    backend: Any = None,
    *,
    table: AliasTable | None = None,
    existing: Iterable[dict] | None = None,
    cancel: threading.Event | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    max_tokens: int = 48,
) -> Proposals:
    """Suggest entities and chunk links for ``doc`` (nothing is written).

    ``backend``: a model for the model pass (None: deterministic pass only). ``existing``:
    entity dicts known beyond this document (e.g. the workspace's), matched like the
    document's own. ``progress(i, n, chunk_id)`` after each chunk.
    """
    props = Proposals(doc.label)
    if not doc.readable or doc.frontmatter_error is not None or doc.data is None:
        props.dropped.append(("(document)", "the frontmatter cannot be read"))
        return props
    known = _Known(table or default_table())
    # existing entities: every spelling -> id
    ents: list[dict] = [e.data for e in doc.entities if isinstance(e.data, dict) and isinstance(e.id, str)]
    ents += [e for e in (existing or []) if isinstance(e, dict) and isinstance(e.get("id"), str)]
    by_form: dict[str, str] = {}
    by_entry: dict[int, str] = {}
    existing_info: dict[str, dict] = {}
    for e in ents:
        eid = e["id"]
        existing_info.setdefault(eid, e)
        forms = [e.get("name")] + (e.get("aliases") if isinstance(e.get("aliases"), list) else [])
        if not e.get("name"):
            forms.append(eid.rsplit(":", 1)[-1].replace("-", " "))
        for f in forms:
            if isinstance(f, (str, int, float)) and str(f).strip():
                by_form.setdefault(fingerprint(str(f)), eid)
                hits = known.table.lookup(str(f))
                if len(hits) == 1:
                    by_entry.setdefault(hits[0], eid)
        by_form.setdefault(fingerprint(eid.rsplit(":", 1)[-1]), eid)

    chunks = [(e.index, e.id, e.data) for e in doc.chunks if isinstance(e.id, str) and isinstance(e.data, dict)]
    found: dict[str, EntityProposal] = {}
    order: list[str] = []
    total = len(chunks)
    for n, (_, cid, data) in enumerate(chunks, 1):
        if cancel is not None and cancel.is_set():
            props.cancelled = True
            break
        bc = doc.body_chunk(cid)
        if bc is None:
            continue
        text = bc.content
        cands = deterministic_candidates(text, known)
        if backend is not None:
            try:
                mc, called = _model_candidates(backend, text, cancel, max_tokens)
                props.model_calls += int(called)
                cands += mc
            except Cancelled:
                props.cancelled = True
                break
            except ModelError as exc:
                props.model_errors.append(f"{cid}: {exc}")
        for c in cands:
            surface = c.surface.strip()
            if c.source == "model":
                if len(surface) > 60 or not _mentions(surface, text):
                    props.dropped.append((surface, "named by the model but not in the chunk"))
                    continue
            canon = known.canonical(surface)
            name = canon or surface
            if c.source == "command":
                # the program's name as the document spells it elsewhere (helm -> Helm)
                canon = known.canonical(surface)
                name = canon or next((m.group(0) for m in re.finditer(r"\b" + re.escape(surface) + r"\b", doc.text, re.IGNORECASE)
                                      if m.group(0) != surface and m.group(0)[:1].isupper()), surface)
            if _is_generic(name) or len(fingerprint(name)) < 2:
                props.dropped.append((surface, "generic word"))
                continue
            # existing entity?
            eid = by_form.get(fingerprint(name)) or by_form.get(fingerprint(surface))
            hits = known.table.lookup(name)
            if eid is None and len(hits) == 1:
                eid = by_entry.get(hits[0])
            if eid is None and c.alias:
                eid = by_form.get(fingerprint(c.alias))
            if eid is not None:
                key = eid
                if key not in found:
                    info = existing_info.get(eid, {})
                    found[key] = EntityProposal(eid, str(info.get("name") or name), str(info.get("type") or ""), existing=eid)
                    order.append(key)
            else:
                key = entity_id(name)
                if key not in found:
                    found[key] = EntityProposal(key, name, _type_for(name, canon, c.model_type, c.source))
                    order.append(key)
            p = found[key]
            if c.source not in p.sources:
                p.sources.append(c.source)
            for form in (surface, c.alias):
                if form and form not in p.forms:
                    p.forms.append(form)
            if p.new:
                for a in (surface, c.alias):
                    if a and fingerprint(a) != fingerprint(p.name) and a not in p.aliases and c.source != "command":
                        p.aliases.append(a)
            if cid not in p.chunks:
                p.chunks.append(cid)
        if progress is not None:
            progress(n, total, cid)

    # a candidate id that an alias-table entry joins to an earlier one (Postgres / PostgreSQL) is merged
    for key in order:
        p = found[key]
        (props.matched if p.existing else props.entities).append(p)
    # chunk links: every chunk that mentions any form of a proposed or matched entity
    for _, cid, data in chunks:
        bc = doc.body_chunk(cid)
        if bc is None:
            continue
        linked = {x for x in (data.get(CHUNK_LINK_FIELD) or []) if isinstance(x, str)} if isinstance(data.get(CHUNK_LINK_FIELD), list) else set()
        for p in props.entities + props.matched:
            if p.id in linked:
                continue
            forms = list(dict.fromkeys(p.forms + [p.name] + p.aliases))
            ev = next((f for f in forms if _mentions(f, bc.content)), None)
            if ev is None and cid in p.chunks:
                ev = p.forms[0] if p.forms else p.name
            if ev is not None:
                if cid not in p.chunks:
                    p.chunks.append(cid)
                props.links.append(ChunkLink(cid, p.id, ev))
    # matched entities without a link to add are not news
    props.matched = [p for p in props.matched if any(link.entity_id == p.id for link in props.links)]
    return props


def apply_proposals(doc: Document, proposals: Proposals, *, entities: Iterable[str] | None = None,
                    links: bool = True, doc_index: int = 0) -> UndoRecord:
    """Append the proposed entities (all, or the ids in ``entities``) and add their chunk links.

    Only the new entity entries and the changed ``entities`` lists of chunks are written.
    Returns an :class:`UndoRecord` (no changes: an empty record).
    """
    chosen = set(entities) if entities is not None else None
    before = doc.text
    declared = {e.id for e in doc.entities}
    added = 0
    new_ids = set()
    for p in proposals.entities:
        if chosen is not None and p.id not in chosen:
            continue
        new_ids.add(p.id)
        if p.id in declared:
            continue
        doc.append_entry("entities", p.to_entity())
        declared.add(p.id)
        added += 1
    allowed = new_ids | {p.id for p in proposals.matched if chosen is None or p.id in chosen}
    linked = 0
    if links:
        by_chunk: dict[str, list[str]] = {}
        for link in proposals.links:
            if link.entity_id in allowed:
                by_chunk.setdefault(link.chunk_id, []).append(link.entity_id)
        for entry in doc.chunks:
            if entry.id not in by_chunk or not isinstance(entry.data, dict):
                continue
            current = entry.data.get(CHUNK_LINK_FIELD)
            current = list(current) if isinstance(current, list) else []
            new = current + [e for e in dict.fromkeys(by_chunk[entry.id]) if e not in current]
            if new != current:
                doc.set_field("chunks", entry.index, CHUNK_LINK_FIELD, new)
                linked += len(new) - len(current)
    changes = [DocChange(doc.path, doc_index, before, doc.text)] if doc.text != before else []
    return UndoRecord("extract-entities", f"add {added} entit{'y' if added == 1 else 'ies'} and {linked} chunk link{'s' if linked != 1 else ''}", changes)

