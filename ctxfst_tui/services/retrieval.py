"""The Retrieval view's state: the workspace's index kept up to date, queries, and the scoreboard.

Plain Python, no Textual. The index is built from the session's documents as held in memory
(unsaved edits included), from ``snapshots`` (bytes) so a worker never touches a live document.
Each ``refresh`` re-indexes incrementally (only changed chunks are re-embedded), reopens the
searcher and re-scores the folder's ``queries.yaml``; what flipped is said with the label of
the edit that caused it ("q3 ✗ → ✓ after merge entity:js → entity:javascript").

Every method may run in a worker thread: the searcher is swapped under a lock, and a query
holds the searcher it started with (LanceDB readers are not disturbed by a new version).
lancedb is imported only inside those calls (through ``core.retrieval.index.lancedb``, which
keeps its Rust core quiet), never when this module is imported.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import yaml

from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.retrieval.corpus import corpus_from_documents
from ctxfst_tui.core.retrieval.evaluate import EvalQuery, QueryScore, load_queries, our_ranker, score_method
from ctxfst_tui.core.retrieval.index import IndexStats, build_index, default_uri
from ctxfst_tui.core.safe_write import ABSENT, write_text

QUERIES_FILE = "queries.yaml"
SCORE_K = 3  # the benchmark's k: a query is ✓ when a relevant chunk is in the top 3
EmbedderFactory = Callable[[], Any]  # → an Embedder, or None for full-text and entity signals only
# (question, target language, cancel) → the model's translation, or None when it gave nothing usable
Translator = Callable[[str, str, "threading.Event | None"], "str | None"]


class RetrievalError(ValueError):
    """Something the view reports in one line (a bad queries file, a query before the index)."""


@dataclass
class ScoreRow:
    """One query of the scoreboard as last scored."""

    id: str
    query: str
    hit: bool
    first_rank: int | None
    top: list[str] = field(default_factory=list)

    @property
    def mark(self) -> str:
        return "✓" if self.hit else "✗"

    @property
    def rank_text(self) -> str:
        return f"#{self.first_rank}" if self.first_rank else "—"


@dataclass
class Refresh:
    """What one re-index did: its stats, the scoreboard after it and what changed on it."""

    stats: IndexStats
    scoreboard: list[ScoreRow]
    changes: list[str]
    label: str = ""
    queries_error: str = ""


def _flip(before: ScoreRow, after: ScoreRow) -> str:
    if before.hit != after.hit:
        return f"{after.id} {before.mark} → {after.mark}"
    if before.first_rank != after.first_rank:
        return f"{after.id} {before.rank_text} → {after.rank_text}"
    return ""


def split_expected(text: str) -> tuple[list[str], list[str]]:
    """``"entity:go, skill:go-runtime"`` → (expected entities, expected chunks): ids that start
    with ``entity:`` are entities, every other id a chunk."""
    ids = [p.strip() for p in text.replace(";", ",").replace(" ", ",").split(",") if p.strip()]
    return [i for i in ids if i.startswith("entity:")], [i for i in ids if not i.startswith("entity:")]


class RetrievalService:
    """One folder's index, its searcher, and its scoreboard."""

    def __init__(self, root: Path, *, embedder_factory: EmbedderFactory | None = None,
                 uri: str | None = None, k: int = SCORE_K, translator: Translator | None = None) -> None:
        """``translator``: how a question in another script than the documents is translated
        (the workbench's model); None searches every question as written."""
        self.root = Path(root)
        self.uri = uri or default_uri(self.root)
        self.k = k
        self._embedder_factory = embedder_factory
        self._embedder: Any = None
        self._embedder_loaded = False
        self._lock = threading.Lock()  # one re-index at a time; the searcher swapped under it
        self._searcher: Any = None
        self.queries: list[EvalQuery] = []
        self.scoreboard: list[ScoreRow] = []
        self.history: list[str] = []  # every change called out, oldest first
        self.stats: IndexStats | None = None
        self._translator = translator
        self._translations: dict[tuple[str, str], str | None] = {}  # a question typed again is not re-asked
        self.translation_problem = ""  # why questions are searched as written (the model failed once)

    @property
    def queries_path(self) -> Path:
        return self.root / QUERIES_FILE

    @property
    def ready(self) -> bool:
        return self._searcher is not None

    def embedder(self) -> Any:
        if not self._embedder_loaded:
            self._embedder = self._embedder_factory() if self._embedder_factory else None
            self._embedder_loaded = True
        return self._embedder

    # ------------------------------------------------------------ the index
    def refresh(self, snapshots: Iterable[tuple[Path, bytes]], label: str = "",
                cancel: threading.Event | None = None) -> Refresh:
        """Bring the index up to date with these documents, reopen the searcher, re-score."""
        docs = [Document(raw, path=path) for path, raw in snapshots]
        return self.refresh_documents(docs, label, cancel)

    def refresh_documents(self, docs: Iterable[Document], label: str = "",
                          cancel: threading.Event | None = None) -> Refresh:
        from ctxfst_tui.core.retrieval.query import Searcher

        corpus = corpus_from_documents(docs, self.root)
        with self._lock:
            stats = build_index(corpus, self.uri, self.embedder(), cancel=cancel)
            emb = self.embedder()
            self._searcher = Searcher(self.uri, embedder_factory=lambda _name: emb)
            self.stats = stats
            error = ""
            try:
                self.queries = self._read_queries()
            except RetrievalError as exc:
                error = str(exc)
            board = self._score(self._searcher, self.queries)
            changes = self._changes(self.scoreboard, board, label)
            self.scoreboard = board
            self.history.extend(changes)
        return Refresh(stats, board, changes, label, error)

    def _read_queries(self) -> list[EvalQuery]:
        if not self.queries_path.is_file():
            return []
        try:
            return load_queries(self.queries_path)
        except ValueError as exc:
            raise RetrievalError(str(exc)) from None

    def _score(self, searcher: Any, queries: list[EvalQuery]) -> list[ScoreRow]:
        if not queries:
            return []
        translations = {q.id: self.translation(searcher, q.query) for q in queries}
        method = score_method("default", our_ranker(searcher, "auto", translations), searcher, queries, self.k)
        by_id: dict[str, QueryScore] = {s.id: s for s in method.per_query}
        return [ScoreRow(q.id, q.query, by_id[q.id].hit, by_id[q.id].first_rank, by_id[q.id].top) for q in queries]

    @staticmethod
    def _changes(before: list[ScoreRow], after: list[ScoreRow], label: str) -> list[str]:
        if not before:
            return []  # the first scoring: nothing changed, it is where we start
        old = {r.id: r for r in before}
        suffix = f" after {label}" if label else ""
        out = []
        for row in after:
            if row.id in old and (flip := _flip(old[row.id], row)):
                out.append(flip + suffix)
        return out

    # ------------------------------------------------------------ queries
    def translation(self, searcher: Any, query: str, cancel: threading.Event | None = None) -> str | None:
        """``query`` translated when it is in another script than the documents, else None. A model
        that fails is not asked again: the questions are searched as written, and
        ``translation_problem`` says why."""
        target = searcher.translation_target(query)
        if not target or self._translator is None or self.translation_problem:
            return None
        key = (" ".join(query.split()), target)
        if key not in self._translations:
            try:
                self._translations[key] = self._translator(query, target, cancel)
            except Exception as exc:  # no model here, a failed self-test, a cancelled call
                if cancel is not None and cancel.is_set():
                    return None  # a newer question replaced this one: nothing went wrong
                self.translation_problem = f"not translated ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
                return None
        return self._translations[key]

    def search(self, query: str, *, k: int = 5, mode: str = "auto", cancel: threading.Event | None = None) -> Any:
        """The query's Answer (core.retrieval.query.Answer), ranked and explained; a question in
        another script is searched together with its translation."""
        searcher = self._require()
        return searcher.search(query, mode=mode, k=k, translated=self.translation(searcher, query, cancel))

    def explain(self, query: str, chunk: str, *, mode: str = "auto") -> Any:
        """"Why not this one?": ``chunk`` is a chunk id or a key; None when no chunk has it."""
        searcher = self._require()
        key = chunk if chunk in searcher.rows else next(
            (k for k, r in searcher.rows.items() if r["chunk_id"] == chunk), None)
        return searcher.explain(query, key, mode=mode, translated=self.translation(searcher, query)) if key else None

    def chunk_ids(self) -> list[str]:
        searcher = self._searcher
        return sorted(r["chunk_id"] for r in searcher.rows.values()) if searcher else []

    def location(self, key: str) -> tuple[Path, str] | None:
        """The file and chunk id of an indexed key (to open it in the source)."""
        searcher = self._searcher
        row = searcher.rows.get(key) if searcher else None
        return (self.root / row["document"], row["chunk_id"]) if row else None

    def _require(self) -> Any:
        if self._searcher is None:
            raise RetrievalError("the index is still being built; try again in a moment")
        return self._searcher

    # ------------------------------------------------------------ the scoreboard's file
    def add_query(self, query: str, expected: str) -> EvalQuery:
        """Append a query to the folder's queries.yaml (created if missing) and score it.

        ``expected``: entity ids and/or chunk ids, comma-separated (see ``split_expected``).
        The file is appended to as text, so the comments and extra fields of the other queries
        stay as they were; the write is atomic and refused if the file changed meanwhile."""
        query = query.strip()
        ents, chunks = split_expected(expected)
        if not query:
            raise RetrievalError("type the query first")
        if not (ents or chunks):
            raise RetrievalError("say which entities (entity:…) or chunk ids should answer it")
        with self._lock:
            existing = self._read_queries()
            ids = {q.id for q in existing}
            n = len(existing) + 1
            while f"q{n}" in ids:
                n += 1
            new = EvalQuery(f"q{n}", query, ents, chunks)
            path = self.queries_path
            old = path.read_bytes() if path.is_file() else None
            text = _appended(old.decode("utf-8") if old is not None else None, new)
            write_text(path, text, expected=old if old is not None else ABSENT)
            self.queries = existing + [new]
            if self._searcher is not None:
                self.scoreboard = self.scoreboard + self._score(self._searcher, [new])
        return new


def _appended(text: str | None, q: EvalQuery) -> str:
    """The queries file with ``q`` added at the end of its list, indented as its items are."""
    if text is None or not text.strip():
        return yaml.safe_dump({"queries": [q.to_yaml()]}, allow_unicode=True, sort_keys=False)
    indent = 2
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        node = None
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if getattr(key, "value", None) == "queries" and isinstance(value, yaml.SequenceNode) and value.value:
                indent = value.value[0].start_mark.column - 2
    block = yaml.safe_dump([q.to_yaml()], allow_unicode=True, sort_keys=False, indent=2)
    pad = " " * max(0, indent)
    lines = [pad + line if line.strip() else line for line in block.splitlines()]
    return text + ("" if text.endswith("\n") else "\n") + "\n".join(lines) + "\n"
