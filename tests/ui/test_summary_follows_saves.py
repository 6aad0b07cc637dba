"""Summaries follow the writing (issue #16, item 3): when a summarized manuscript is saved, here or
by another program, its stale scenes are re-summarized in the background — the three-calls-per-
edited-scene path — for the novel the Summary tab shows and for one it does not; a save while
another model job runs waits for it (the novel shown is read again at once, its ~ marks shown);
``[summary] resummarize_on_save = false`` only marks them ~.

The folder watcher is off in Pilot tests: its batch of changes is posted as the watcher posts it.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import SAMPLE_DOCS
from ctxfst_tui.config import Config
from ctxfst_tui.core.summary import load_store
from ctxfst_tui.core.workspace.watch import DiskChange
from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.messages import DiskChanged
from ctxfst_tui.ui.widgets.document.tree import DocumentTree
from ctxfst_tui.ui.widgets.summary.tree import SummaryPane
from fakes import BlockingStoryBackend
from pilot import SIZE, notifications, settle, started, until
from test_summary_pane import EDITED_PHRASE, STORY, move_to, open_summary, summarize


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    novels = tmp_path / "novels"
    novels.mkdir()
    for name in ("story", "other", "busy"):
        shutil.copy(STORY, novels / f"{name}.txt")
    shutil.copy(SAMPLE_DOCS / "frontend-notes.ctxfst.md", tmp_path / "notes.ctxfst.md")
    return tmp_path


def edit_scene(path: Path, new: str) -> None:
    """The writer changes a phrase of chapter two's first scene and saves."""
    text = path.read_text(encoding="utf-8")
    assert EDITED_PHRASE in text or "like paper left by" in text
    path.write_text(text.replace(EDITED_PHRASE, new), encoding="utf-8")


def stored_scene(path: Path) -> dict:
    """Chapter two's first scene as the summary store beside ``path`` holds it."""
    stack = [load_store(path.with_suffix(".summary.json"))["tree"]]
    while stack:
        node = stack.pop()
        if node.get("id") == "c2.s1":
            return node
        stack.extend(node.get("children") or [])
    raise AssertionError(f"no c2.s1 in the store of {path.name}")


async def show_while_busy(app: WorkbenchApp, pilot, path: Path) -> SummaryPane:
    """Enter on ``path`` in the document tree, then 5, while a model job runs (``open_summary``
    settles, which waits for every worker, the blocked job too)."""
    tree = app.screen.query_one(DocumentTree)
    tree.focus()
    order = [tree.get_node_at_line(i).data for i in range(tree.last_line + 1)]
    await pilot.press(*(["down" if order.index(path) > tree.cursor_line else "up"]
                        * abs(order.index(path) - tree.cursor_line)), "enter", "5")
    pane = app.screen.query_one(SummaryPane)
    await until(pilot, lambda: pane.view is not None and pane.path == path)
    return pane


async def blocked_job(app: WorkbenchApp, pilot, pane: SummaryPane, fake: BlockingStoryBackend):
    """Summarize chapter one of the pane's novel with a model that blocks at its next call until
    escape; the running job."""
    fake.block_at = fake.calls + 1
    fake.blocked.clear()
    await move_to(pilot, pane.tree, "c1")
    await pilot.press("s")
    await until(pilot, lambda: fake.blocked.is_set())
    return app.job


def saved_on_disk(app: WorkbenchApp, path: Path) -> None:
    app.screen.post_message(DiskChanged([DiskChange("modified", path)]))


async def test_a_saved_novel_is_re_summarized_in_the_background(folder: Path):
    fake = BlockingStoryBackend()
    app = WorkbenchApp(folder, backend_factory=lambda settings: fake, config=Config(folder / "config.toml"))
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        told = notifications(app)
        # chapter two of "other" summarized, then chapter two of "story" (the novel shown)
        pane = await open_summary(app, pilot, "novels/other.txt")
        await summarize(app, pilot, pane, "c2")
        pane = await open_summary(app, pilot, "novels/story.txt")
        await summarize(app, pilot, pane, "c2")
        assert [pane.tree.views[i].status for i in ("c2", "c2.s1", "c2.s2")] == ["done"] * 3
        story = folder / "novels" / "story.txt"
        before = stored_scene(story)

        # (1) the novel shown, saved by another program: its edited scene and chapter are made
        # again without a key pressed (the next scene is reused: its prompt did not change)
        calls = fake.calls
        told.clear()
        edit_scene(story, "like paper left by the fire")
        saved_on_disk(app, story)
        await until(pilot, lambda: any("Re-summarizing 1 edited scene of novels/story.txt in the background (escape"
                                       in t for _, t, _ in told))
        await until(pilot, lambda: app.job is None and stored_scene(story) != before)
        await settle(app, pilot)
        assert fake.calls - calls == 2
        assert [pane.tree.views[i].status for i in ("c2", "c2.s1", "c2.s2")] == ["done"] * 3
        after = stored_scene(story)
        assert after["status"] == "done" and after != before
        assert any(title == "Summarized" for title, _, _ in told), told

        # (2) a novel not shown: read in a worker, re-summarized the same way; the tab keeps "story"
        other = folder / "novels" / "other.txt"
        before = stored_scene(other)
        calls = fake.calls
        edit_scene(other, "like paper left in the rain")
        saved_on_disk(app, other)
        await until(pilot, lambda: any("Re-summarizing 1 edited scene of novels/other.txt" in t for _, t, _ in told))
        await until(pilot, lambda: app.job is None and stored_scene(other) != before)
        await settle(app, pilot)
        assert fake.calls - calls == 2
        assert stored_scene(other)["status"] == "done" and stored_scene(other) != before
        assert app.screen.query_one(SummaryPane).path == story

        # (3) a save while another job runs waits for it, then is followed
        busy = folder / "novels" / "busy.txt"
        pane = await open_summary(app, pilot, "novels/busy.txt")
        await summarize(app, pilot, pane, "c2")
        pane = await open_summary(app, pilot, "novels/story.txt")
        running = await blocked_job(app, pilot, pane, fake)
        before = stored_scene(busy)
        edit_scene(busy, "like paper left in the snow")
        saved_on_disk(app, busy)
        await pilot.pause()
        assert app.job is running  # not started over the running job, and no warning about it
        assert not any("still running" in t for _, t, _ in told)
        fake.block_at = None
        await pilot.press("escape")
        await until(pilot, lambda: app.job is None and stored_scene(busy) != before, timeout=20)
        await settle(app, pilot)
        assert stored_scene(busy)["status"] == "done"
        assert not any(v.status == "stale" for v in app.screen.query_one(SummaryPane).view.nodes)

        # (4) the novel shown, saved while a job runs on another: read again at once (its edited
        # scene marked ~ while the job runs), re-summarized once the job ends
        pane = await open_summary(app, pilot, "novels/busy.txt")
        running = await blocked_job(app, pilot, pane, fake)
        pane = await show_while_busy(app, pilot, story)
        before = stored_scene(story)
        story.write_text(story.read_text(encoding="utf-8").replace("like paper left by the fire", "like paper left on the stair"),
                         encoding="utf-8")  # the phrase edited in (1), edited again
        saved_on_disk(app, story)
        await until(pilot, lambda: pane.view is not None and pane.tree.views["c2.s1"].status == "stale")
        assert app.job is running and stored_scene(story) == before
        fake.block_at = None
        await pilot.press("escape")
        await until(pilot, lambda: app.job is None and stored_scene(story) != before, timeout=20)
        await settle(app, pilot)
        assert stored_scene(story)["status"] == "done"
        assert [pane.tree.views[i].status for i in ("c2", "c2.s1", "c2.s2")] == ["done"] * 3


async def test_with_the_setting_off_a_save_only_marks_stale(folder: Path):
    fake = BlockingStoryBackend()
    app = WorkbenchApp(folder, backend_factory=lambda settings: fake, config=Config(folder / "config.toml", resummarize_on_save=False))
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        pane = await open_summary(app, pilot, "novels/story.txt")
        await summarize(app, pilot, pane, "c2")
        calls = fake.calls
        story = folder / "novels" / "story.txt"
        edit_scene(story, "like paper left by the fire")
        saved_on_disk(app, story)
        await until(pilot, lambda: pane.tree.views["c2.s1"].status == "stale")
        await settle(app, pilot)
        assert app.job is None and fake.calls == calls
        assert [pane.tree.views[i].status for i in ("c2", "c2.s1", "c2.s2")] == ["stale", "stale", "done"]
        # a novel not shown is not even read
        saved_on_disk(app, folder / "novels" / "other.txt")
        await settle(app, pilot)
        assert app.job is None and fake.calls == calls
