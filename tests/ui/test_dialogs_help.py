"""Dialogs and help as a newcomer meets them (issue 16, defect 6): the contextualize dialog takes
``y`` / ``n``, starts where space and Enter do something, and shows its box's state without colour;
the help screen titles every group in words and lists escape (cancel job) and the Summary's
``space`` / ``r``; the quit dialog offers "Save and quit", which saves through the one save path
and quits only when everything was written."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import Checkbox

from conftest import SAMPLE_DOCS
from ctxfst_tui.core.workspace.entity_ops import add_alias
from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.screens.modals.confirm import ConfirmScreen
from ctxfst_tui.ui.screens.modals.contextualize import ContextualizeScreen
from ctxfst_tui.ui.screens.modals.help import HelpScreen
from ctxfst_tui.ui.screens.modals.quit import QuitScreen
from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen
from ctxfst_tui.ui.widgets.entities.panel import ClusterList, EntityTable
from pilot import open_document, settle, started
from fakes import StreamingNotesBackend
from test_model_jobs import RUNBOOK
from pilot import notifications, until

SMALL = (80, 24)
SIZE = (120, 40)
STORY = SAMPLE_DOCS / "novels" / "the-keeper-of-gull-rock.txt"

FRONTEND = """\
---
title: "Frontend notes"
entities:
  - id: entity:react
    name: React
    type: framework
chunks:
  - id: skill:react
    entities: [entity:react]
    context: "React components"
---

<Chunk id="skill:react">
Function components with hooks.
</Chunk>
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "runbook.md").write_text(RUNBOOK, encoding="utf-8")
    (tmp_path / "frontend.md").write_text(FRONTEND, encoding="utf-8")
    novels = tmp_path / "novels"
    novels.mkdir()
    shutil.copy(STORY, novels / "story.txt")
    return tmp_path


def screen_text(app: WorkbenchApp) -> str:
    return app.export_screenshot().replace("&#160;", " ")


# ---------------------------------------------------------------- the help screen, the contextualize and quit dialogs


async def help_groups(app: WorkbenchApp, pilot) -> dict[str, list[tuple[str, str, bool]]]:
    await app.push_screen(HelpScreen())
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, HelpScreen)
    groups = {g.title: [(r.keys, r.description, r.enabled) for r in g.rows] for g in screen.groups}
    text = screen_text(app)
    for title in list(groups)[:2]:
        assert title in text  # drawn, not only computed
    return groups


async def close_help(app: WorkbenchApp, pilot) -> None:
    await pilot.press("escape")
    await pilot.pause()
    assert isinstance(app.screen, WorkbenchScreen)


async def contextualize_dialog(app: WorkbenchApp, pilot, document: str | None = None) -> ContextualizeScreen:
    """ctrl+k on ``document`` (opened first), or on the one open when None."""
    if document is not None:
        await open_document(app, pilot, document)
    await pilot.press("ctrl+k")
    await pilot.pause()
    assert isinstance(app.screen, ContextualizeScreen), document
    return app.screen


# ---------------------------------------------------------------- the quit dialog


async def edited(app: WorkbenchApp, pilot) -> WorkbenchScreen:
    screen = await started(app, pilot)
    screen.editing.apply("Aliases", lambda: app.session.run(add_alias, "entity:react", "ReactJS"))
    await pilot.pause()
    assert app.session.dirty_paths
    return screen


async def quit_dialog_n_escape_fit_then_enter_saves(app: WorkbenchApp, pilot) -> None:
    """After an edit of frontend.md: n and escape stay, the dialog fits 80 columns, Enter saves then quits."""
    screen = await edited(app, pilot)
    # n and escape stay, the edit kept.
    for key in ("n", "escape"):
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, QuitScreen), key
        await pilot.press(key)
        await pilot.pause()
        assert app.is_running and app.screen is screen and app.session.dirty_paths, key
    # At 80 columns the dialog and all three buttons fit.
    await pilot.press("q")
    await pilot.pause()
    dialog = app.screen
    assert isinstance(dialog, QuitScreen) and isinstance(dialog, ConfirmScreen)
    dialog_region = dialog.query_one("#dialog").region
    assert dialog_region.right <= SMALL[0]
    for button in dialog.query("Button"):
        assert button.region.right <= dialog_region.right  # all three buttons fit at 80 columns
    # "Save and quit" is offered and focused: Enter saves, then quits.
    assert "Save and quit" in screen_text(app)
    assert dialog.focused is dialog.query_one("#save")  # Enter saves: the answer that loses nothing
    await pilot.press("enter")
    await until(pilot, lambda: not app.is_running, timeout=10)


CLASS_NAMES = ("SummaryPane", "SummaryTree", "WorkbenchScreen", "WorkbenchApp", "EntityTable", "ClusterList",
               "DocumentTree", "ChunkMap", "ChunkPreview", "DiagnosisPane")


async def test_help_in_the_entities_and_summary_then_the_contextualize_and_quit_dialogs(folder):
    """One App walks the help screen's cases, then the contextualize dialog's: no model job runs
    until its last case (y), so the help screen's "Cancel job" is dimmed and every ctrl+k opens the
    dialog; once that job is done, the quit dialog's n, escape, fit and Enter (which quits)."""
    (folder / "bare.md").write_text(RUNBOOK.replace('    context: "', '    note: "'), encoding="utf-8")
    fake = StreamingNotesBackend()
    app = WorkbenchApp(folder, backend_factory=lambda settings: fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)

        # Help titles are words, and escape (cancel job) is listed.
        await open_document(app, pilot, "frontend.md")
        await pilot.press("3")
        await settle(app, pilot)
        screen.query_one(EntityTable).focus()
        await pilot.pause()
        groups = await help_groups(app, pilot)
        titles = list(groups)
        assert titles[0] == "Entities table (focused)"
        assert "Workbench" in titles and "Everywhere" in titles
        assert not any(name in title for title in titles for name in CLASS_NAMES)
        cancel = [row for row in groups["Everywhere"] if row[0] == "esc"]
        assert cancel == [("esc", "Cancel job (while a model job runs)", False)]  # no job: dimmed, still there
        await close_help(app, pilot)
        screen.query_one(ClusterList).focus()
        await pilot.pause()
        groups = await help_groups(app, pilot)
        assert list(groups)[0] == "Suggested merges (focused)"
        await close_help(app, pilot)

        # Help in the Summary lists space and r.
        await open_document(app, pilot, "novels/story.txt")
        await pilot.press("5")
        await until(pilot, lambda: screen.query_one("SummaryPane").view is not None, timeout=30)
        await pilot.pause()
        groups = await help_groups(app, pilot)
        assert list(groups)[0] == "Summary"
        summary = {keys: (description, enabled) for keys, description, enabled in groups["Summary"]}
        assert {"s", "b", "e", "space", "r"} <= set(summary)
        assert summary["space"] == ("Open or close a chapter", True)
        assert summary["r"][0].startswith("Read the manuscript again")
        text = screen_text(app)
        assert "Open or close a chapter" in text and "Read the manuscript again" in text
        await close_help(app, pilot)

        # Contextualize: n cancels.
        await open_document(app, pilot, "runbook.md")
        await pilot.press("1")  # back to the Source tab, where the dialog cases started
        await pilot.pause()
        await contextualize_dialog(app, pilot)
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, WorkbenchScreen) and app.job is None

        # Contextualize with nothing to skip starts on Start, and space presses it.
        dialog = await contextualize_dialog(app, pilot, "bare.md")
        assert dialog.query_one(Checkbox).disabled
        assert dialog.focused is dialog.query_one("#start")
        answers = []
        dialog.dismiss = lambda result=None: answers.append(result)
        await pilot.press("space")
        await pilot.pause()
        assert answers == [{"skip_present": False}]
        del dialog.dismiss  # the real one again: n closes it
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, WorkbenchScreen) and app.job is None

        # Contextualize: the focus starts on the box, space ticks it visibly, Enter starts.
        dialog = await contextualize_dialog(app, pilot, "runbook.md")
        box = dialog.query_one("#skip-present", Checkbox)
        assert not box.disabled and dialog.focused is box  # the runbook has chunks with a context
        unticked = box.render().plain
        assert "✓" not in unticked
        await pilot.press("space")
        await pilot.pause()
        assert box.value is True
        assert "✓" in box.render().plain and "✓" in screen_text(app)  # readable without colour
        answers = []
        dialog.dismiss = lambda result=None: answers.append(result)  # what Enter answers
        await pilot.press("enter")
        await pilot.pause()
        assert answers == [{"skip_present": True}]
        del dialog.dismiss

        # Contextualize starts on y.
        assert app.screen is dialog
        jobs = []
        original = app.start_job
        app.start_job = lambda job, body, reply_to: jobs.append(job) or original(job, body, reply_to)
        await pilot.press("y")
        await pilot.pause()
        assert not isinstance(app.screen, ContextualizeScreen)
        assert [j.kind for j in jobs] == ["contextualize"]

        # The quit dialog, at 80x24, once the job is done (it left the runbook edited).
        await until(pilot, lambda: app.job is None, timeout=30)
        await pilot.resize_terminal(*SMALL)
        assert tuple(app.size) == SMALL
        await quit_dialog_n_escape_fit_then_enter_saves(app, pilot)
    assert "ReactJS" in (folder / "frontend.md").read_text(encoding="utf-8")


# ---------------------------------------------------------------- the quit dialog, on its own: each ends by quitting


async def test_save_and_quit_by_s(folder):
    app = WorkbenchApp(folder)
    async with app.run_test(size=SMALL) as pilot:
        await edited(app, pilot)
        await pilot.press("q")
        await pilot.pause()
        await pilot.press("s")
        await until(pilot, lambda: not app.is_running, timeout=10)
    assert "ReactJS" in (folder / "frontend.md").read_text(encoding="utf-8")


async def test_a_failed_save_keeps_the_app_open_and_says_why(folder, monkeypatch):
    app = WorkbenchApp(folder)
    async with app.run_test(size=SMALL) as pilot:
        screen = await edited(app, pilot)
        seen = notifications(app, monkeypatch)
        other = "---\ntitle: changed elsewhere\n---\n"
        (folder / "frontend.md").write_text(other, encoding="utf-8")  # the save's lost-update guard refuses
        await pilot.press("q")
        await pilot.pause()
        await pilot.press("s")
        await until(pilot, lambda: any(t == "Not quit" for t, _, _ in seen), timeout=10)
        await settle(app, pilot)
        assert app.is_running and app.screen is screen
        assert app.session.dirty_paths  # the edit is still there
        [(_, message, severity)] = [n for n in seen if n[0] == "Not quit"]
        assert severity == "error" and "frontend.md" in message and "save failed" in message
        assert (folder / "frontend.md").read_text(encoding="utf-8") == other  # nothing overwritten
        await pilot.press("q")  # asks again; y still quits without saving
        await pilot.pause()
        assert isinstance(app.screen, QuitScreen)
        await pilot.press("y")
        await pilot.pause()
        assert not app.is_running
