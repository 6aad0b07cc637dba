"""Pilot tests for the Summary tab: a novel's summary tree in the workbench — open it (segmented in a
worker), expand it, summarize a chapter with a fake model and watch the nodes go pending → running →
done, cancel with escape, a failed node, the summary beside its source, stale nodes after the file
changes, keys answered while the model works, the layout at 80×24, empty and error states.

The model is a fake backend handed to the App (``backend_factory``), never llama.cpp. Each test is one
App walking several cases in turn; a case that needs a novel nothing has touched yet opens its own
copy of the story (``novels/<case>.txt``: its own summary store beside it, the same node ids).
"""
from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.style import Style
from textual.widgets import TabbedContent, TextArea

from conftest import SAMPLE_DOCS
from ctxfst_tui.core.summary import load_store
from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.screens.workbench.commands import COMMANDS
from ctxfst_tui.services.jobs import JobProgress
from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen
from ctxfst_tui.ui.widgets.document.tree import DocumentTree
from ctxfst_tui.ui.widgets.jobs.status import JobStatus
from ctxfst_tui.ui.widgets.summary.tree import SummaryPane, SummaryTree
from pilot import SIZE, open_document, settle, started
from pilot import notifications, until
from fakes import BlockingStoryBackend

STORY = SAMPLE_DOCS / "novels" / "the-keeper-of-gull-rock.txt"
EDITED_PHRASE = "like paper left in the sun"  # the middle of chapter two's first scene


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    novels = tmp_path / "novels"
    novels.mkdir()
    shutil.copy(STORY, novels / "story.txt")
    (tmp_path / "runbook.ctxfst.md").write_text('---\ntitle: "Runbook"\nchunks: []\n---\n\nBody.\n', encoding="utf-8")
    (tmp_path / "binary.txt").write_bytes(b"PK\x03\x04\x00\x00binary\x00stuff")
    return tmp_path


def pane_of(app: WorkbenchApp) -> SummaryPane:
    return app.screen.query_one(SummaryPane)


def status(app: WorkbenchApp, node_id: str) -> str:
    return pane_of(app).tree.views[node_id].status


def node_of(tree: SummaryTree, node_id: str):
    """The tree's node for a summary node id, found through the public Tree API (root and children)."""
    stack = [tree.root]
    while stack:
        node = stack.pop()
        if node.data == node_id:
            return node
        stack.extend(node.children)
    raise AssertionError(f"{node_id} is not in the summary tree")


def label_of(tree: SummaryTree, node_id: str) -> str:
    node = node_of(tree, node_id)
    return tree.render_label(node, tree.rich_style, tree.rich_style).plain


async def choose_document(app: WorkbenchApp, pilot, relative: str) -> None:
    """``open_document`` without waiting for every worker (a model job may be running)."""
    tree = app.screen.query_one(DocumentTree)
    target = app.folder / relative
    tree.focus()
    await pilot.pause()
    order = [node.data for node in (tree.get_node_at_line(i) for i in range(tree.last_line + 1))]
    steps = order.index(target) - tree.cursor_line
    await pilot.press(*(["down" if steps > 0 else "up"] * abs(steps)), "enter")
    await until(pilot, lambda: app.screen.current == target)


def record_jobs(app: WorkbenchApp, monkeypatch) -> list:
    """Every job the App starts (a fast fake finishes before the key press returns)."""
    jobs: list = []
    original = app.start_job

    def start_job(job, body, reply_to):
        jobs.append(job)
        return original(job, body, reply_to)

    monkeypatch.setattr(app, "start_job", start_job)
    return jobs


async def open_summary(app: WorkbenchApp, pilot, relative: str = "novels/story.txt") -> SummaryPane:
    """Open the novel in the document tree, press 5, wait for its summary tree (focused)."""
    await open_document(app, pilot, relative)
    await pilot.press("5")
    pane = pane_of(app)
    await until(pilot, lambda: pane.view is not None and pane.path == app.folder / relative)
    await pilot.pause()
    return pane


def copies(folder: Path, *names: str) -> None:
    """Fresh copies of the story beside it, one per case that needs an untouched novel."""
    for name in names:
        shutil.copy(STORY, folder / "novels" / f"{name}.txt")


async def move_to(pilot, tree: SummaryTree, node_id: str) -> None:
    """Walk the cursor with Up/Down to ``node_id`` (opening chapters with space on the way, as a user would)."""
    for _ in range(60):
        current = tree.current
        if current is not None and current.id == node_id:
            return
        order = [tree.get_node_at_line(i).data for i in range(tree.last_line + 1)]
        if node_id in order:
            await pilot.press("down" if order.index(node_id) > tree.cursor_line else "up")
            continue
        # open the chapter that holds it
        chapter = node_id.split(".")[0]
        if chapter in order and not node_of(tree, chapter).is_expanded:
            await pilot.press(*(["down" if order.index(chapter) > tree.cursor_line else "up"]
                                * abs(order.index(chapter) - tree.cursor_line)))
            await pilot.press("space")
            continue
        raise AssertionError(f"{node_id} is not reachable in the tree")
    raise AssertionError(f"did not reach {node_id}")


async def summarize(app: WorkbenchApp, pilot, pane: SummaryPane, node_id: str) -> None:
    """Highlight ``node_id``, press s, wait for the job to end."""
    await move_to(pilot, pane.tree, node_id)
    await pilot.press("s")
    await until(pilot, lambda: app.job is None)
    await settle(app, pilot)


# ---------------------------------------------------------------- opening, states, finished and running jobs


async def test_the_summary_tab_through_finished_and_running_jobs(folder, monkeypatch):
    """One App, one fake model. Answering at once: (1) the tab before any novel, (2) empty and error
    states, (3) the novel opened in a worker and its tree, (4) a chapter run pending → running → done,
    (5) stale nodes after the file changes and r, (6) a rejected answer retried then summarised by extract,
    (7) the palette's Summarize book on the novel shown. Blocking from a chosen call until the job's
    cancel event is set: (8) escape cancels a running chapter and leaves pending nodes, s resumes;
    (9) keys are answered while the whole book runs; (10) another novel while a job runs, then back
    (a copy running, another copy shown meanwhile: the same node ids). Cases (6)–(10) each open
    their own untouched copy of the story."""
    import ctxfst_tui.ui.app as app_module

    copies(folder, "failed", "book", "escape", "keys", "run", "other")
    threads: list[str] = []
    original = app_module.open_novel

    def spy(path, session=None):
        threads.append(threading.current_thread().name)
        return original(path, session)

    monkeypatch.setattr(app_module, "open_novel", spy)
    fake = BlockingStoryBackend()

    def block_from(n: int) -> None:
        """From the n-th call of the next job on, the fake blocks until escape."""
        fake.block_at = fake.calls + n
        fake.blocked.clear()
        fake.cancelled.clear()

    app = WorkbenchApp(folder, backend_factory=lambda settings: fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        told = notifications(app, monkeypatch)
        jobs = record_jobs(app, monkeypatch)

        # (1) the tab with nothing selected yet
        await pilot.press("5")
        await pilot.pause()
        assert screen.query_one(TabbedContent).active == "summary-tab"
        pane = pane_of(app)
        assert pane.has_class("-empty") and "Select a novel" in pane.status_text  # nothing selected yet

        # (2) empty and error states: a binary file, a CtxFST document
        await open_document(app, pilot, "binary.txt")
        await pilot.press("5")
        await until(pilot, lambda: pane.has_class("-error"))
        assert pane.status_text == "✗ binary.txt: not a text file"
        assert "\n" not in pane.status_text and pane.view is None

        await open_document(app, pilot, "runbook.ctxfst.md")
        await pilot.pause()
        assert "CtxFST document, not a manuscript" in pane.status_text and not pane.has_class("-error")
        await pilot.press("s")  # nothing to summarize: a warning, no job
        assert app.job is None and jobs == []

        # (3) the novel: segmented in a worker, its tree
        threads.clear()
        pane = await open_summary(app, pilot)
        assert threads and threading.main_thread().name not in threads  # segmented in a worker
        tree = pane.tree
        assert tree.has_focus and not pane.has_class("-empty")
        assert screen.has_class("-workspace-tab")  # the document summary steps aside: full height
        # book → chapters (closed) with word counts and marks; front matter skipped
        shown = [tree.get_node_at_line(i).data for i in range(tree.last_line + 1)]
        assert shown == ["book", "front", "c1", "c2", "c3"]
        assert label_of(tree, "book") == "▼ · The Keeper of Gull Rock  1,336 w"
        assert label_of(tree, "c1") == "▶ · Chapter One: The Lamp  469 w"
        assert label_of(tree, "front").startswith("- Front matter")
        assert "The Keeper of Gull Rock" in pane.status_text and "3 chapters, 6 scenes" in pane.status_text
        assert pane.status_text.endswith("words, 3 chapters, 6 scenes   · 10 pending")

        # expand one chapter with space, then everything with e
        await move_to(pilot, tree, "c2")
        await pilot.press("space")
        shown = [tree.get_node_at_line(i).data for i in range(tree.last_line + 1)]
        assert shown == ["book", "front", "c1", "c2", "c2.s1", "c2.s2", "c3"]
        await pilot.press("e")
        assert tree.last_line + 1 == 11
        await pilot.press("e")  # again: closed
        assert tree.last_line + 1 == 5

        # a pending node says how to summarize it; its source is beside it
        await move_to(pilot, tree, "c1.s2")
        assert "Not summarized yet" in pane.summary_text and "s summarizes" in pane.summary_text
        assert pane.source.text.startswith("The wind dropped at dawn")
        assert "Scene 2" in str(pane.source.border_title) and "Chapter One" in str(pane.source.border_title)
        await move_to(pilot, tree, "c1")
        await pilot.press("space")  # close Chapter One again, as it was before the walk
        assert not node_of(tree, "c1").is_expanded and tree.last_line + 1 == 5

        # (4) run a chapter: its nodes go pending → running → done and fill in
        seen: list[tuple[str, str]] = []
        update = pane.update_node
        monkeypatch.setattr(pane, "update_node", lambda view: (seen.append((view.id, view.status)), update(view)))
        progress: list[JobProgress] = []
        show = pane.show_progress
        monkeypatch.setattr(pane, "show_progress", lambda m: (progress.append(m), show(m)))
        told.clear()
        assert {status(app, i) for i in ("c1", "c1.s1", "c1.s2")} == {"pending"}

        await move_to(pilot, pane.tree, "c1")
        await pilot.press("s")
        assert [(j.kind, j.node, j.total) for j in jobs] == [("summarize", "c1", 3)]
        await until(pilot, lambda: app.job is None)
        await settle(app, pilot)

        # every node of the chapter started, then finished, scenes before their chapter
        assert seen == [("c1.s1", "running"), ("c1.s1", "done"), ("c1.s2", "running"), ("c1.s2", "done"),
                        ("c1", "running"), ("c1", "done")]
        assert fake.calls == 3 and threading.main_thread().name not in fake.threads
        assert [status(app, i) for i in ("c1", "c1.s1", "c1.s2", "c2", "book")] == ["done"] * 3 + ["pending"] * 2
        assert label_of(pane.tree, "c1").startswith("▶ ✓ Chapter One")
        # progress: node i of 3 with an ETA
        assert progress and all(m.unit == "node" and m.total == 3 for m in progress)
        assert progress[-1].done == 3 and progress[-1].eta == 0
        assert any(title == "Summarized" and "nodes 3, model calls 3, cache hits 0, failed 0" in text
                   for title, text, _ in told), told
        # the store beside the manuscript holds them
        stored = load_store(folder / "novels" / "story.summary.json")
        assert [c["status"] for c in stored["tree"]["children"][1]["children"]] == ["done", "done"]

        # a done node: its summary beside its source
        await move_to(pilot, pane.tree, "c1.s1")
        summary = pane.tree.views["c1.s1"].summary
        assert summary and summary in pane.summary_text
        assert pane.source.text.startswith("The gale came in from the north-east")
        box = pane.query_one("#summary-box")
        assert pane.has_class("-medium")  # 160 columns: the summary over the source, beside the tree
        assert pane.tree.region.right <= box.region.x and pane.tree.region.right <= pane.source.region.x
        assert box.region.bottom <= pane.source.region.y and pane.source.region.height > 10

        # (5) a stale node is marked after the source changes and r; s makes exactly the stale ones again
        await summarize(app, pilot, pane, "c2")
        assert [status(app, i) for i in ("c2", "c2.s1", "c2.s2")] == ["done"] * 3

        path = folder / "novels" / "story.txt"
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace(EDITED_PHRASE, "like paper left by the fire"), encoding="utf-8")
        told.clear()
        await pilot.press("r")
        await until(pilot, lambda: status(app, "c2.s1") == "stale")
        await settle(app, pilot)
        assert [status(app, i) for i in ("c2", "c2.s1", "c2.s2")] == ["stale", "stale", "done"]
        assert label_of(pane.tree, "c2.s1").startswith("~ Scene 1")
        assert "2 stale" in pane.status_text
        assert any("2 stale nodes" in text for _, text, _ in told), told
        await move_to(pilot, pane.tree, "c2.s1")
        assert "Stale" in pane.summary_text and "by the fire" in pane.source.text

        calls = fake.calls
        await summarize(app, pilot, pane, "c2")
        assert fake.calls - calls == 2
        assert [status(app, i) for i in ("c2", "c2.s1", "c2.s2")] == ["done"] * 3

        # (6) a rejected answer is retried, then the node gets the scene's own sentences, marked ¶
        pane = await open_summary(app, pilot, "novels/failed.txt")
        fake.script = ["", ""]  # the first scene: empty twice
        calls = fake.calls
        await summarize(app, pilot, pane, "c1")
        assert [status(app, i) for i in ("c1.s1", "c1.s2", "c1")] == ["done", "done", "done"], \
            (fake.calls - calls, fake.script, pane.path, pane.tree.views["c1.s1"])
        assert label_of(pane.tree, "c1.s1").startswith("¶ Scene 1 ⚑")
        await move_to(pilot, pane.tree, "c1.s1")
        assert "Extractive" in pane.summary_text and "rejected: empty answer" in pane.summary_text
        assert "1 extractive" in pane.status_text

        # (7) the palette's Summarize book runs on the novel shown (an untouched copy)
        await open_summary(app, pilot, "novels/book.txt")
        jobs.clear()
        calls = fake.calls
        app.screen.action_summarize_book()
        await pilot.pause()
        assert [(j.node, j.scope) for j in jobs] == [(None, "the book")]
        await until(pilot, lambda: app.job is None)
        await settle(app, pilot)
        assert fake.calls - calls == 10
        assert all(v.status in ("done", "skipped") for v in pane_of(app).tree.views.values())

        # (8) escape cancels a running summary and leaves pending nodes (an untouched copy)
        pane = await open_summary(app, pilot, "novels/escape.txt")
        block_from(2)  # the first scene is summarized, the second call waits for escape
        told.clear()
        await move_to(pilot, pane.tree, "c1")
        await pilot.press("s")
        await until(pilot, fake.blocked.is_set)
        await until(pilot, lambda: status(app, "c1.s2") == "running")
        assert status(app, "c1.s1") == "done" and status(app, "c1") == "pending"
        assert label_of(pane.tree, "c1.s2").startswith("… Scene 2")
        line = screen.query_one(JobStatus).text
        assert "Summarizing Chapter One: The Lamp of novels/escape.txt" in line and "node 2 of 3" in line
        assert "node 2 of 3 · ETA" in pane.status_text and "Chapter One: The Lamp › Scene 2" in pane.status_text
        assert "esc cancels" in pane.status_text

        await pilot.press("escape")
        took = await until(pilot, lambda: app.job is None, timeout=3)
        assert took < 1.5 and fake.cancelled.is_set()
        await settle(app, pilot)
        # the cancelled node is pending again, the finished one kept, nothing after it ran
        assert [status(app, i) for i in ("c1.s1", "c1.s2", "c1")] == ["done", "pending", "pending"]
        assert any(title == "Cancelled" and "1 of 3 nodes" in text for title, text, _ in told), told
        assert "of 3" not in pane.status_text and "1 done" in pane.status_text
        assert not app.check_action("cancel_job", ())  # escape is the focused widget's again

        # s again resumes: the done scene is reused, no call for it
        fake.block_at = None
        calls = fake.calls
        await pilot.press("s")
        await until(pilot, lambda: app.job is None)
        await settle(app, pilot)
        assert fake.calls - calls == 2
        assert [status(app, i) for i in ("c1.s1", "c1.s2", "c1")] == ["done"] * 3

        # (9) keys are answered while the summary job runs (the whole book of an untouched copy)
        pane = await open_summary(app, pilot, "novels/keys.txt")
        block_from(1)
        finished = fake.finished
        await pilot.press("b")  # the whole book
        assert app.job is not None and app.job.node is None and app.job.total == 10
        await until(pilot, fake.blocked.is_set)
        tree = pane.tree
        line = tree.cursor_line
        await pilot.press("down")
        assert tree.cursor_line == line + 1
        await pilot.press("e")
        assert tree.last_line + 1 == 11
        await pilot.press("1")
        assert screen.query_one(TabbedContent).active == "source-tab"
        await pilot.press("5")
        assert screen.query_one(TabbedContent).active == "summary-tab" and tree.has_focus
        await pilot.press("s")  # one job at a time: a warning, not a second job
        assert app.job is not None and app.job.node is None
        assert not fake.cancelled.is_set() and fake.finished == finished  # all of it while the model was busy
        await pilot.press("escape")
        await until(pilot, lambda: app.job is None, timeout=3)
        await settle(app, pilot)
        assert all(v.status in ("pending", "skipped") for v in tree.views.values())

        # (10) another novel while a job runs, then back
        pane = await open_summary(app, pilot, "novels/run.txt")
        block_from(2)
        await move_to(pilot, pane.tree, "c1")
        await pilot.press("s")
        await until(pilot, lambda: status(app, "c1.s2") == "running")

        # the other novel (same ids): none of the job's node changes or progress land on it
        await choose_document(app, pilot, "novels/other.txt")
        await until(pilot, lambda: pane.path == folder / "novels" / "other.txt" and pane.view is not None)
        await pilot.pause(0.2)  # a moment in which the running job must not touch it
        assert pane.job is None and "node" not in pane.status_text.split("—")[0]
        assert {v.status for v in pane.tree.views.values()} <= {"pending", "skipped"}

        # back to the novel being summarized: its live tree, still running
        await choose_document(app, pilot, "novels/run.txt")
        await pilot.pause()
        assert pane.path == folder / "novels" / "run.txt" and pane.job is app.job
        assert status(app, "c1.s1") == "done" and status(app, "c1.s2") == "running"
        await pilot.press("escape")
        await until(pilot, lambda: app.job is None, timeout=3)
        await settle(app, pilot)
        assert [status(app, i) for i in ("c1.s1", "c1.s2", "c1")] == ["done", "pending", "pending"]


# ---------------------------------------------------------------- layout, palette, bindings


async def test_the_layout_at_120_80_200_and_96_columns(folder):
    """One App resized in turn: (1) 120×40, long titles cut so word counts stay in sight; (2) 80×24,
    the pane stacks and everything is visible; (3) 200×60, three columns; (4) 96×30, the status line
    wraps between counts, never inside one."""
    app = WorkbenchApp(folder, backend_factory=lambda settings: BlockingStoryBackend())
    async with app.run_test(size=(120, 40)) as pilot:
        await started(app, pilot)
        pane = await open_summary(app, pilot)

        # (1) 120×40: long titles are cut so that word counts stay in sight
        await pilot.press("e")  # every chapter open
        await pilot.pause()
        tree = pane.tree
        width = tree.scrollable_content_region.width
        assert tree.scroll_offset.y == 0 and tree.size.height > tree.last_line  # every line is drawn
        for line in range(tree.last_line + 1):
            node = tree.get_node_at_line(line)
            label = tree.render_label(node, Style(), Style())
            view = tree.views[node.data]
            assert label.plain.endswith(f"{view.words:,} w"), label.plain
            drawn = tree.render_line(line).text.rstrip()  # the guides, then the label, as on screen
            assert drawn.endswith(label.plain) and cell_len(drawn) <= width, (drawn, label.plain)
            indent = cell_len(drawn) - label.cell_len
            if label.cell_len + indent < width - 1:
                assert view.title in label.plain  # cut only when it has to be
        assert any("…" in tree.render_label(tree.get_node_at_line(i), Style(), Style()).plain
                   for i in range(tree.last_line + 1))  # this novel's long chapter titles are cut here
        assert tree.max_scroll_x == 0  # nothing to scroll sideways

        # (2) 80×24: the pane stacks and everything is visible
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: pane.has_class("-narrow"))
        await pilot.pause()
        tree, box, source = pane.tree, pane.query_one("#summary-box"), pane.query_one("#summary-source", TextArea)
        assert tree.region.bottom <= box.region.y and box.region.bottom <= source.region.y  # stacked
        for widget in (tree, box, source):
            assert widget.region.height >= 4 and widget.region.width >= 44, widget
            assert widget.region.bottom <= 23, widget  # above the footer
        assert pane.query_one("#summary-status").region.height >= 1

        # (3) 200×60: three columns
        await pilot.resize_terminal(200, 60)
        await until(pilot, lambda: pane.has_class("-wide"))
        await pilot.pause()
        tree, box, source = pane.tree, pane.query_one("#summary-box"), pane.source
        assert tree.region.right <= box.region.x and box.region.right <= source.region.x
        assert tree.region.y == box.region.y == source.region.y and source.region.width >= 50

        # (4) 96×30: the status line wraps between counts, never inside one
        await pilot.resize_terminal(96, 30)
        await until(pilot, lambda: not pane.has_class("-wide"))
        await summarize(app, pilot, pane, "c1")
        status_line = pane.query_one("#summary-status")
        lines = [strip.text.strip() for strip in status_line.render_lines(status_line.region.reset_offset)]
        lines = [line for line in lines if line]
        assert len(lines) > 1, lines  # the line is too long for 96 columns: it wraps
        assert "✓ 3 done" in lines[-1] and "· 7 pending" in lines[-1]
        for line in lines:
            assert not line.endswith(("✓", "·", "✗", "~", "…")) and not line.split()[-1].isdigit(), lines


def test_palette_entries_and_binding_ids():
    actions = {action: name for name, _, action, _ in COMMANDS}
    assert actions["summarize_node"] == "Summarize selected node" and actions["summarize_book"] == "Summarize book"
    assert any(b.id == "show-summary" and b.key == "5" for b in WorkbenchScreen.BINDINGS)
    ids = {b.key: b.id for b in SummaryPane.BINDINGS}
    assert ids == {"s": "summary.summarize-node", "b": "summary.summarize-book", "e": "summary.expand-all"}
