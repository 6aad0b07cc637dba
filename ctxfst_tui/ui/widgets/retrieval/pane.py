"""The Retrieval view: a query box with results as you type, the scoreboard, "why not this one?".

The pane drives a ``services.retrieval.RetrievalService`` and never blocks on it: re-indexing,
queries, explanations and added queries all run in thread workers (lancedb is imported there,
never on the UI thread), on the lowered threads of ``core.background`` so that the embedder's
own threads never outrank the one that draws what is typed. Typing is debounced; a query
answered after a newer one was typed is dropped. Re-index requests that arrive while one runs are folded into one that follows it, so
the index catches up with the latest text and the scoreboard names every edit it covers.

Intents go up as messages: ``ChunkOpenRequested`` (Enter on a result: open the chunk in the
source and the chunk preview) and ``ScoreboardChanged`` (what flipped, to be said aloud).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.suggester import SuggestFromList
from textual.timer import Timer
from textual.widgets import Input, Static
from textual.worker import get_current_worker

from ctxfst_tui.core.background import run_in_background
from ctxfst_tui.ui.widgets.fixed_input import FixedInput
from ctxfst_tui.ui.widgets.retrieval.results import ResultList, bar
from ctxfst_tui.ui.widgets.retrieval.scoreboard import Scoreboard

DEBOUNCE_SECONDS = 0.3
RESULTS_K = 5
STACK_BELOW = 90  # cells
QUERY_HINT = "Type a question; Enter goes to the results."  # fits the field at 80×24
WHY, ADD = "why", "add"


@dataclass(eq=False)
class _Indexed(Message):
    refresh: Any
    labels: list[str]


@dataclass(eq=False)
class _Answered(Message):
    seq: int
    query: str
    answer: Any = None
    error: str = ""


@dataclass(eq=False)
class _Explained(Message):
    query: str
    chunk: str
    result: Any = None
    error: str = ""


@dataclass(eq=False)
class _QueryAdded(Message):
    query: Any = None
    error: str = ""


@dataclass(eq=False)
class _Failed(Message):
    error: str


class RetrievalPane(Vertical):
    """Query box on top, results beside the scoreboard, the status and "why not" below."""

    BINDINGS = [
        Binding("slash", "focus_query", "Query", id="retrieval.focus-query", tooltip="Type a question"),
        Binding("w", "ask('why')", "Why not…", id="retrieval.why-not",
                tooltip="Pick a chunk that should have come back and see its score breakdown"),
        Binding("a", "ask('add')", "Add to scoreboard", id="retrieval.add-query",
                tooltip="Save the query in queries.yaml with the ids that should answer it"),
    ]

    @dataclass(eq=False)
    class ChunkOpenRequested(Message):
        """Open ``chunk_id`` of ``path`` in the source and the chunk preview."""

        path: Path
        chunk_id: str

    @dataclass(eq=False)
    class ScoreboardChanged(Message):
        """A re-index changed the scoreboard: ``changes`` as called out ("q3 ✗ → ✓ after …")."""

        changes: list[str] = field(default_factory=list)

    def __init__(self, service: Any = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.service = service
        self._debounce: Timer | None = None
        self._seq = 0  # bumped per query asked; older answers are dropped
        self._indexing = False
        self._pending: tuple[list[tuple[Path, bytes]], list[str]] | None = None
        self._asking = ""
        self.answer: Any = None
        self._said_problem = ""
        self.border_title = "Retrieval"

    def compose(self) -> ComposeResult:
        yield FixedInput(placeholder=QUERY_HINT, id="retrieval-query")
        with Horizontal(id="retrieval-body"):
            yield ResultList(id="retrieval-results")
            yield Scoreboard(id="retrieval-scoreboard")
        yield FixedInput(id="retrieval-ask", classes="-hidden")
        yield Static("", id="retrieval-why", classes="-hidden")
        yield Static("The index is built when the workspace is loaded.", id="retrieval-status")

    def on_mount(self) -> None:
        self.query_one(ResultList).show_answer(None, QUERY_HINT)
        self.query_one(Scoreboard).show([], [], self._k(), "The scoreboard appears once the index is built.")

    def on_resize(self) -> None:
        """Below ``STACK_BELOW`` cells the scoreboard goes under the results, not beside them."""
        self.set_class(self.size.width < STACK_BELOW, "-stacked")

    def _k(self) -> int:
        return getattr(self.service, "k", 3)

    @property
    def query_text(self) -> str:
        return self.query_one("#retrieval-query", Input).value

    def use_service(self, service: Any) -> None:
        self.service = service

    def _status(self, text: str | Content) -> None:
        self.query_one("#retrieval-status", Static).update(text)

    # ------------------------------------------------------------ the index
    def reindex(self, snapshots: list[tuple[Path, bytes]], label: str = "") -> None:
        """Bring the index up to date with these documents (the session's snapshots) after the
        edit ``label`` (its undo description; "" for the first build or a reload)."""
        if self.service is None:
            return
        if self._indexing:
            labels = (self._pending[1] if self._pending else []) + ([label] if label else [])
            self._pending = (snapshots, labels)
            return
        self._start_index(snapshots, [label] if label else [])

    @property
    def indexing(self) -> bool:
        return self._indexing or self._pending is not None

    def _start_index(self, snapshots: list[tuple[Path, bytes]], labels: list[str]) -> None:
        self._indexing = True
        self._status(Content.styled("Updating the index…", "$text-muted"))
        self.run_worker(partial(self._index_worker, self.service, snapshots, labels), name="updating the index",
                        group="retrieval-index", thread=True, exit_on_error=False)

    def _index_worker(self, service: Any, snapshots: list[tuple[Path, bytes]], labels: list[str]) -> None:
        # cancelled when the pane goes (the app quits): the embedder stops after its current batch,
        # so quitting during a long first index does not wait for the whole corpus to be embedded
        cancel = get_current_worker().cancelled_event
        try:
            refresh = run_in_background(service.refresh, snapshots, ", ".join(labels), cancel)
        except Exception as exc:  # a broken index folder, an embedder that cannot load: said, not raised
            if not cancel.is_set():
                self.post_message(_Failed(f"Index not updated: {exc}"))
            return
        self.post_message(_Indexed(refresh, labels))

    @on(_Indexed)
    def _indexed(self, message: _Indexed) -> None:
        message.stop()
        r = message.refresh
        s = r.stats
        took = f"{s.chunks} chunks · {s.embedded} embedded · {s.entities} entities · {s.seconds:.1f} s"
        self._status(Content.assemble(("Index up to date: ", "$text-success"), (took, "$text-muted")))
        self.query_one(Scoreboard).show(self.service.scoreboard, self.service.history, self._k(), r.queries_error)
        self._after_index()
        if self.query_text.strip():
            self._ask_query(self.query_text)  # the results follow the edit
        if r.changes:
            self.post_message(self.ScoreboardChanged(list(r.changes)))

    @on(_Failed)
    def _failed(self, message: _Failed) -> None:
        message.stop()
        self._status(Content.styled(message.error, "$text-error"))
        self._after_index()

    def _after_index(self) -> None:
        self._indexing = False
        if self._pending is not None:
            snapshots, labels = self._pending
            self._pending = None
            self._start_index(snapshots, labels)

    # ------------------------------------------------------------ queries
    @on(Input.Changed, "#retrieval-query")
    def _typed(self, event: Input.Changed) -> None:
        event.stop()
        if self._debounce is not None:
            self._debounce.stop()
        self._debounce = self.set_timer(DEBOUNCE_SECONDS, lambda: self._ask_query(self.query_text))

    @on(Input.Submitted, "#retrieval-query")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self._debounce is not None:
            self._debounce.stop()
        self._ask_query(event.value)
        self.query_one(ResultList).focus()

    def _ask_query(self, text: str) -> None:
        self._seq += 1
        results = self.query_one(ResultList)
        if not text.strip():
            self.answer = None
            results.show_answer(None, QUERY_HINT)
            return
        if self.service is None or not self.service.ready:
            results.show_answer(None, "The index is being built; the results follow when it is ready.")
            return
        self.run_worker(partial(self._query_worker, self.service, self._seq, text), name="searching",
                        group="retrieval-query", thread=True, exclusive=True, exit_on_error=False)

    def _query_worker(self, service: Any, seq: int, text: str) -> None:
        try:
            answer = run_in_background(service.search, text, k=RESULTS_K, cancel=get_current_worker().cancelled_event)
        except Exception as exc:  # a query the index cannot run (another embedder): said in the list
            self.post_message(_Answered(seq, text, error=str(exc)))
            return
        self.post_message(_Answered(seq, text, answer))

    @on(_Answered)
    def _answered(self, message: _Answered) -> None:
        message.stop()
        if message.seq != self._seq:
            return  # a newer query was typed meanwhile
        self.answer = message.answer
        self.query_one(ResultList).show_answer(message.answer, message.error)
        problem = getattr(self.service, "translation_problem", "")
        if problem and message.answer is not None and self._said_problem != problem:
            self._said_problem = problem  # said once: every later question is searched as written too
            self._status(Content.styled(f"Searched as written: {problem}", "$text-warning"))

    @on(ResultList.ChunkChosen)
    def _chosen(self, message: ResultList.ChunkChosen) -> None:
        message.stop()
        root = getattr(self.service, "root", Path("."))
        self.post_message(self.ChunkOpenRequested(root / message.document, message.chunk_id))

    @on(Scoreboard.QueryChosen)
    def _query_chosen(self, message: Scoreboard.QueryChosen) -> None:
        message.stop()
        box = self.query_one("#retrieval-query", Input)
        box.value = message.query
        if self._debounce is not None:
            self._debounce.stop()
        self._ask_query(message.query)

    def action_focus_query(self) -> None:
        self.query_one("#retrieval-query", Input).focus()

    # ------------------------------------------------------------ "why not this one?" and adding a query
    def action_ask(self, what: str) -> None:
        if not self.query_text.strip():
            self._status(Content.styled("Type a query first.", "$text-warning"))
            self.action_focus_query()
            return
        ask = self.query_one("#retrieval-ask", Input)
        self._asking = what
        if what == WHY:
            ids = self.service.chunk_ids() if self.service is not None else []
            ask.suggester = SuggestFromList(ids, case_sensitive=True)
            ask.placeholder = "Chunk id that should have come back (→ completes; Enter: its breakdown; esc: back)"
        else:
            ask.suggester = None
            ask.placeholder = f"Entity or chunk ids that answer “{self.query_text.strip()}” (comma-separated; Enter: save)"
        ask.value = ""
        ask.remove_class("-hidden")
        ask.focus()

    def _close_ask(self) -> None:
        self.query_one("#retrieval-ask", Input).add_class("-hidden")
        self._asking = ""
        self.query_one(ResultList).focus()

    def on_key(self, event: Any) -> None:
        """Escape leaves a field for the results (where the view's letter keys and 1–6 work)."""
        if event.key != "escape":
            return
        if self._asking and self.query_one("#retrieval-ask", Input).has_focus:
            event.stop()
            self._close_ask()
        elif self.query_one("#retrieval-query", Input).has_focus:
            event.stop()
            self.query_one(ResultList).focus()

    @on(Input.Submitted, "#retrieval-ask")
    def _ask_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        what, value, query = self._asking, event.value.strip(), self.query_text
        self._close_ask()
        if not value or self.service is None:
            return
        if what == WHY:
            self.run_worker(partial(self._explain_worker, self.service, query, value), name="explaining",
                            group="retrieval-explain", thread=True, exclusive=True, exit_on_error=False)
        elif what == ADD:
            self.run_worker(partial(self._add_worker, self.service, query, value), name="adding a query",
                            group="retrieval-add", thread=True, exit_on_error=False)

    def _explain_worker(self, service: Any, query: str, chunk: str) -> None:
        try:
            result = run_in_background(service.explain, query, chunk)
        except Exception as exc:
            self.post_message(_Explained(query, chunk, error=str(exc)))
            return
        self.post_message(_Explained(query, chunk, result, "" if result else f"no chunk '{chunk}' in the index"))

    @on(_Explained)
    def _explained(self, message: _Explained) -> None:
        message.stop()
        why = self.query_one("#retrieval-why", Static)
        why.remove_class("-hidden")
        why.update(explanation(message.query, message.chunk, message.result, message.error))

    def _add_worker(self, service: Any, query: str, expected: str) -> None:
        try:
            added = run_in_background(service.add_query, query, expected)
        except Exception as exc:  # nothing expected, a file changed on disk meanwhile: said
            self.post_message(_QueryAdded(error=str(exc)))
            return
        self.post_message(_QueryAdded(added))

    @on(_QueryAdded)
    def _query_added(self, message: _QueryAdded) -> None:
        message.stop()
        if message.error:
            self._status(Content.styled(f"Query not added: {message.error}", "$text-error"))
            return
        self.query_one(Scoreboard).show(self.service.scoreboard, self.service.history, self._k())
        self._status(Content.styled(f"Added {message.query.id} to {self.service.queries_path.name}", "$text-success"))


def explanation(query: str, chunk: str, result: Any, error: str = "") -> Content:
    """The breakdown of one chunk's score for ``query``: its rank, each signal, the entity hits."""
    if error:
        return Content.styled(f"Why not {chunk}? {error}", "$text-error")
    head = Content.assemble(("Why not ", "$text-muted"), (result.chunk_id, "bold $text-accent"), ("? ", "$text-muted"))
    if not result.signals:
        return head + Content.styled(f"no signal reaches it for “{query}”: none of its words, entities or "
                                     f"meaning came close (score 0).", "$text-warning")
    lines = [head + Content.styled(f"rank {result.rank}, score {result.score:.2f}", "bold")]
    for name, share in sorted(result.signals.items(), key=lambda kv: -kv[1]):
        lines.append(Content.assemble(f"  {name:<7}", (bar(result.raw.get(name, 0.0)), "$text-success"),
                                      (f" {result.raw.get(name, 0.0):.2f} of the best · {share:.2f} of the score", "$text-muted")))
    missing = [s for s in ("bm25", "vector", "entity") if s in result.raw and not result.raw[s]]
    if missing:
        lines.append(Content.styled("  nothing from: " + ", ".join(missing), "$text-muted"))
    if result.terms:
        lines.append(Content.styled("  matched terms: " + ", ".join(result.terms), "$text-muted"))
    for e in result.entities[:4]:
        lines.append(Content.styled(f"  entity {e.name}: " + (f"“{e.matched}”" if e.matched else e.via), "$text-primary"))
    return Content("\n").join(lines)
