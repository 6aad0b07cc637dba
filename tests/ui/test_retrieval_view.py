"""Pilot tests of the Retrieval view: type a query and results appear; an alias added through the
session flips a query on the scoreboard; Enter asks to open the chunk; "why not this one?"; a query
added in the view lands in queries.yaml. A real LanceDB index in a temp dir, no embedder (the
vectors do not matter here: the alias works through the full-text and entity signals)."""
from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import held_session
from fakes import TranslatingBackend
from pilot import notifications, settle, started, until
from rich.cells import cell_len
from textual.app import App, ComposeResult
from textual.widgets import Input, TabbedContent

from ctxfst_tui.core.retrieval.embedders import EmbedCancelled
from ctxfst_tui.core.retrieval.evaluate import load_queries
from ctxfst_tui.core.workspace.entity_ops import add_alias
from ctxfst_tui.services.retrieval import RetrievalService
from ctxfst_tui.services.session import Session
from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.widgets.chunks.chunk_map import ChunkMap
from ctxfst_tui.ui.widgets.document.source_view import SourceView
from ctxfst_tui.ui.widgets.retrieval.pane import RetrievalPane
from ctxfst_tui.ui.widgets.retrieval.results import ResultList, bar, fit, result_prompt, snippet, wrap
from ctxfst_tui.ui.widgets.retrieval.scoreboard import Scoreboard

STYLES = Path(__file__).resolve().parents[2] / "ctxfst_tui" / "ui" / "styles"


class Host(App):
    """The pane alone, with its own styles, recording the intents it posts."""

    CSS_PATH = [STYLES / "retrieval_pane.tcss", STYLES / "retrieval_results.tcss", STYLES / "retrieval_scoreboard.tcss"]

    def __init__(self, service: RetrievalService) -> None:
        super().__init__()
        self.service = service
        self.opened: list[tuple[Path, str]] = []
        self.changes: list[str] = []

    def compose(self) -> ComposeResult:
        yield RetrievalPane(self.service)

    def on_retrieval_pane_chunk_open_requested(self, message: RetrievalPane.ChunkOpenRequested) -> None:
        self.opened.append((message.path, message.chunk_id))

    def on_retrieval_pane_scoreboard_changed(self, message: RetrievalPane.ScoreboardChanged) -> None:
        self.changes.extend(message.changes)


@pytest.fixture
def folder(retrieval_folder: Path) -> Path:
    return retrieval_folder


async def _settle(app: App, pilot) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


async def _type(pilot, text: str) -> None:
    for ch in text:
        await pilot.press("space" if ch == " " else ch)


async def _indexed(app: Host, pilot, session: Session) -> RetrievalPane:
    pane = app.query_one(RetrievalPane)
    pane.reindex(session.snapshots())
    await _settle(app, pilot)
    assert app.service.ready
    return pane


async def test_typing_a_query_shows_ranked_explained_results(folder):
    session = held_session(folder)
    app = Host(RetrievalService(folder))
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await _indexed(app, pilot, session)
        results = pane.query_one(ResultList)
        pane.query_one("#retrieval-query").focus()
        await _type(pilot, "garbage collector")
        assert results.results == []  # debounced: nothing asked while typing
        await pilot.pause(0.4)
        await _settle(app, pilot)
        assert [r.chunk_id for r in results.results] == ["lang:rust"]
        prompt = results.get_option_at_index(0).prompt
        assert "lang:rust" in prompt.plain and "bm25 " in prompt.plain and "garbage collector" in prompt.plain
        highlighted = {prompt.plain[s.start:s.end].casefold() for s in prompt.spans if "warning" in str(s.style)}
        assert {"garbage", "collector"} <= highlighted
        await pilot.press("enter")  # to the results, then Enter on the first
        await pilot.press("enter")
        await pilot.pause()
        assert app.opened == [(folder / "langs.ctxfst.md", "lang:rust")]


async def test_a_question_the_model_cannot_translate_is_searched_as_written_and_said_once(folder):
    def broken(question, target, cancel=None):
        raise RuntimeError("no model could be loaded")

    app = Host(RetrievalService(folder, translator=broken))
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await _indexed(app, pilot, held_session(folder))
        pane.query_one("#retrieval-query", Input).value = "資料庫 PostgreSQL"
        await until(pilot, lambda: pane.answer is not None)
        await _settle(app, pilot)
        status = str(pane.query_one("#retrieval-status").render())
        assert status == "Searched as written: not translated (no model could be loaded)"
        assert [r.chunk_id for r in pane.query_one(ResultList).results][0] == "lang:db"  # its own words still match


async def test_an_alias_added_through_the_session_flips_a_query_on_the_scoreboard(folder):
    session = held_session(folder)
    app = Host(RetrievalService(folder))
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await _indexed(app, pilot, session)
        board = pane.query_one(Scoreboard)
        assert [(r.id, r.mark) for r in board.rows] == [("q1-wal", "✓"), ("q2-ecmascript", "✗")]
        assert "✗ q2-ecmascript" in board.get_option_at_index(1).prompt.plain
        record = session.run(add_alias, "entity:javascript", "ECMAScript")
        pane.reindex(session.snapshots(), record.description)
        await _settle(app, pilot)
        assert [(r.id, r.mark, r.rank_text) for r in board.rows][1] == ("q2-ecmascript", "✓", "#1")
        called = "q2-ecmascript ✗ → ✓ after add alias 'ECMAScript' to entity:javascript"
        assert app.changes == [called] and called in board.changes
        assert any(called in board.get_option_at_index(i).prompt.plain for i in range(board.option_count))
        assert board.border_subtitle == "2/2 hit@3"


async def test_edits_while_indexing_are_folded_into_one_catch_up_naming_both(folder):
    session = held_session(folder)
    app = Host(RetrievalService(folder))
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await _indexed(app, pilot, session)
        first = session.run(add_alias, "entity:rust", "borrow checker")
        pane.reindex(session.snapshots(), first.description)
        second = session.run(add_alias, "entity:javascript", "ECMAScript")
        third = session.run(add_alias, "entity:database", "WAL")
        pane.reindex(session.snapshots(), second.description)
        pane.reindex(session.snapshots(), third.description)  # both wait behind the first
        assert pane.indexing
        await _settle(app, pilot)
        await _settle(app, pilot)
        assert not pane.indexing
        assert app.changes == [f"q2-ecmascript ✗ → ✓ after {second.description}, {third.description}"]


class SlowEmbedder:
    """Two seconds a passage, and it stops at the cancel between two passages, as the real
    embedders stop between two batches."""

    name, dim, source = "slow", 4, "slow"

    def __init__(self) -> None:
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.cancelled = False

    def embed_passages(self, texts, *, cancel=None, progress=None):
        self.started.set()
        try:
            for _ in texts:
                if cancel.wait(2.0) if cancel is not None else time.sleep(2.0):
                    self.cancelled = True
                    raise EmbedCancelled()
            return np.ones((len(texts), self.dim), dtype=np.float32)
        finally:
            self.stopped.set()

    def embed_query(self, text):
        return np.ones(self.dim, dtype=np.float32)


async def test_quitting_while_the_index_is_built_stops_the_embedder_within_a_passage(folder):
    """The index worker hands the embedder its cancel: quitting the app during a long first index
    does not keep the process alive until every chunk is embedded (Python joins that thread at
    exit), and says nothing about an index it was told to stop."""
    slow = SlowEmbedder()
    app = Host(RetrievalService(folder, embedder_factory=lambda: slow))
    seen = notifications(app)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.query_one(RetrievalPane)
        pane.reindex(held_session(folder).snapshots())
        assert await asyncio.to_thread(slow.started.wait, 10)
        assert pane.indexing
    t0 = time.monotonic()
    assert await asyncio.to_thread(slow.stopped.wait, 5)
    assert time.monotonic() - t0 < 3.0 and slow.cancelled
    assert not app.service.ready and not any("Index not updated" in m for _t, m, _s in seen)


async def test_why_not_this_one_and_adding_a_query_from_the_view(folder):
    session = held_session(folder)
    app = Host(RetrievalService(folder))
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await _indexed(app, pilot, session)
        pane.query_one("#retrieval-query").focus()
        await _type(pilot, "write-ahead log")
        await pilot.press("enter")
        await _settle(app, pilot)
        assert [r.chunk_id for r in pane.query_one(ResultList).results] == ["lang:db"]
        await pilot.press("w")
        ask = pane.query_one("#retrieval-ask")
        assert ask.has_focus and "-hidden" not in ask.classes
        await _type(pilot, "lang:rust")
        await pilot.press("enter")
        await _settle(app, pilot)
        why = str(pane.query_one("#retrieval-why").render())
        assert "Why not lang:rust?" in why and "score 0" in why
        await pilot.press("w")
        await _type(pilot, "lang:db")
        await pilot.press("enter")
        await _settle(app, pilot)
        why = str(pane.query_one("#retrieval-why").render())
        assert "rank 1" in why and "bm25" in why
        await pilot.press("a")
        await _type(pilot, "entity:database")
        await pilot.press("enter")
        await _settle(app, pilot)
        assert load_queries(folder / "queries.yaml")[-1].query == "write-ahead log"
        board = pane.query_one(Scoreboard)
        assert [(r.id, r.mark) for r in board.rows][-1] == ("q3", "✓")
        assert "Added q3 to queries.yaml" in str(pane.query_one("#retrieval-status").render())


def test_bars_and_snippets():
    assert bar(1.0) == "█████" and bar(0.0) == "·····" and bar(0.5) == "██▌··" and bar(0.25, 4) == "█···"
    text = "word " * 60 + "PostgreSQL keeps a write-ahead log " + "tail " * 60
    got = snippet(text, ["write"])
    assert "write-ahead" in got and got.startswith("…") and got.endswith("…") and len(got) <= 150
    assert fit("我對資料庫其實懂哪些東西", 9) == "我對資料…" and fit("short", 9) == "short"


def test_a_result_snippet_takes_two_indented_lines_within_the_width():
    """The snippet used to be one long line that the list wrapped at column 0, under the rank."""
    from types import SimpleNamespace

    content = "PostgreSQL keeps a write-ahead log so that a crash loses no committed work. " * 6
    result = SimpleNamespace(rank=1, chunk_id="db:wal", score=0.9, document="db.md", breadcrumb="Storage",
                             raw={"bm25": 1.0}, signals={"bm25": 1.0}, content=content, context="",
                             terms=["write"], entities=[])
    for width in (40, 80):
        lines = result_prompt(result, width).plain.split("\n")
        body = lines[3:5]
        assert all(line.startswith("    ") and cell_len(line) <= width for line in body), body
        assert "write-ahead" in "".join(body) and body[1].endswith("…")
    # the signal bars fit the width too: full names and bars where there is room, then shorter forms
    three = SimpleNamespace(**{**vars(result), "raw": {"bm25": 1.0, "vector": 0.5, "entity": 0.25},
                               "signals": {"bm25": 0.6, "vector": 0.3, "entity": 0.1}})
    wide = result_prompt(three, 80).plain.split("\n")[2]
    assert wide == "    bm25 █████ .60 vector ██▌·· .30 entity █▎··· .10"
    for width, expected in ((46, "    bm25 ███ .60 vector █▌· .30 entity ▊·· .10"),
                            (40, "    bm25 ███ .60 vec █▌· .30 ent ▊·· .10"),
                            (30, "    bm25 .60 vec .30 ent .10")):
        line = result_prompt(three, width).plain.split("\n")[2]
        assert line == expected and cell_len(line) <= width, (width, line)
    cjk = "我對資料庫其實懂哪些東西" * 20
    assert all(cell_len(line) <= 20 for line in wrap(cjk, 20, 2)) and wrap(cjk, 20, 2)[1].endswith("…")


# ---------------------------------------------------------------- in the workbench (key 6)
async def test_in_the_workbench_6_searches_and_an_alias_edit_flips_the_scoreboard(folder):
    model = TranslatingBackend({"哪種語言講所有權？": "Which language has ownership?"})
    app = WorkbenchApp(folder, backend_factory=lambda settings: model)
    seen = notifications(app)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await started(app, pilot)
        assert not (folder / ".ctxfst-index").exists()  # opening a folder writes no index
        screen.retrieval.embedder_factory = lambda: None  # full-text and entity signals: the alias decides
        await pilot.press("6")
        pane = screen.query_one(RetrievalPane)
        assert screen.query_one(TabbedContent).active == "retrieval-tab"
        assert pane.query_one("#retrieval-query").has_focus
        await until(pilot, lambda: screen.retrieval.service is not None and screen.retrieval.service.ready, 60)
        await settle(app, pilot)
        board = pane.query_one(Scoreboard)
        assert [(r.id, r.mark) for r in board.rows] == [("q1-wal", "✓"), ("q2-ecmascript", "✗")]
        await _type(pilot, "ownership")
        await until(pilot, lambda: [r.chunk_id for r in pane.query_one(ResultList).results] == ["lang:rust"], 30)

        # the workbench's own edit path (as the aliases dialog applies it): unsaved, undoable
        session = app.session
        screen.editing.apply("Aliases", lambda: session.run(add_alias, "entity:javascript", "ECMAScript"))
        called = "q2-ecmascript ✗ → ✓ after add alias 'ECMAScript' to entity:javascript"
        await until(pilot, lambda: called in board.changes, 60)
        assert [(r.id, r.mark) for r in board.rows][1] == ("q2-ecmascript", "✓")
        await until(pilot, lambda: any(t == "Scoreboard" and called in m for t, m, _ in seen))

        # a question in another script than the notes: translated by the workbench's model first
        pane.query_one("#retrieval-query", Input).value = "哪種語言講所有權？"  # as an input method hands it over
        results = pane.query_one(ResultList)
        await until(pilot, lambda: "translated: Which language has ownership?" in str(results.border_subtitle), 30)
        assert [r.chunk_id for r in results.results][0] == "lang:rust"
        assert model.asked == ["哪種語言講所有權？"]

        await pilot.press("escape")  # to the results; Enter opens the chunk in the source
        await pilot.press("enter")
        await until(pilot, lambda: screen.current == folder / "langs.ctxfst.md"
                    and screen.query_one(TabbedContent).active == "source-tab", 30)
        await settle(app, pilot)
        assert screen.query_one(SourceView).has_focus
        await until(pilot, lambda: (span := screen.query_one(ChunkMap).current_span) is not None and span.id == "lang:rust")
