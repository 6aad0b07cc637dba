"""Pilot tests for model jobs in the workbench: the UI stays responsive while a slow model runs,
escape cancels, notes land in memory (undoable), entity proposals are reviewed before they are
written, model errors are one notification, the model-settings screen, the palette entries.

The model is a fake backend handed to the App (``backend_factory``), never llama.cpp.
"""
from __future__ import annotations

import importlib.util
import sys
import threading
import time
from pathlib import Path

import pytest
from textual.widgets import Checkbox, Input, RadioButton, SelectionList, TabbedContent

from ctxfst_tui.core.llm import EndpointError, ModelNotFound
from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.screens.workbench.commands import COMMANDS, WorkbenchCommands
from ctxfst_tui.core.llm.settings import ModelSettings
from ctxfst_tui.services.jobs import JobProgress
from ctxfst_tui.ui.screens.modals.contextualize import ContextualizeScreen
from ctxfst_tui.ui.screens.modals.model_settings import ModelSettingsScreen
from ctxfst_tui.ui.screens.modals.proposals import ProposalsScreen
from ctxfst_tui.ui.widgets.chunks.chunk_map import ChunkMap
from ctxfst_tui.ui.widgets.document.summary import DocumentSummary
from ctxfst_tui.ui.widgets.document.tree import DocumentTree
from ctxfst_tui.ui.widgets.jobs.status import JobStatus
from ctxfst_tui.ui.widgets.document.source_view import SourceView
from pilot import SIZE, notifications, open_document, settle, started, until
from fakes import StreamingNotesBackend

RUNBOOK = """\
---
title: "Orders service runbook"
entities:
  - id: entity:helm
    name: Helm
    type: tool
chunks:
  - id: ops:deploy
    tags: [Deploy]
    entities: [entity:helm]
    context: "Written by hand"
  - id: ops:database
    tags: [Database]
  - id: ops:cache
    tags: [Cache]
---

# Orders service runbook

<Chunk id="ops:deploy">
## Deploy

Run `helm upgrade --install orders ./chart --atomic`. The release rolls back by itself when pods are not ready.
</Chunk>

<Chunk id="ops:database">
## Database

The service uses PostgreSQL through PgBouncer, with at most 40 server connections.
</Chunk>

<Chunk id="ops:cache">
## Cache

Sessions live in Redis with the `allkeys-lru` eviction policy.
</Chunk>
"""

OTHER = """\
---
title: "Other notes"
chunks:
  - id: misc:one
    context: "Nothing to see"
---

<Chunk id="misc:one">
Nothing here.
</Chunk>
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "runbook.md").write_text(RUNBOOK, encoding="utf-8")
    (tmp_path / "other.md").write_text(OTHER, encoding="utf-8")
    return tmp_path


def contexts(app: WorkbenchApp, folder: Path) -> dict[str, str | None]:
    doc = app.session.document(folder / "runbook.md")
    return {c.id: c.data.get("context") for c in doc.chunks}


async def start_contextualize(app: WorkbenchApp, pilot, skip: bool = False) -> None:
    await pilot.press("ctrl+k")
    await pilot.pause()
    assert isinstance(app.screen, ContextualizeScreen)
    if skip:
        app.screen.query_one(Checkbox).value = True
    await pilot.press("enter")  # Start has the focus
    await pilot.pause()


async def test_model_jobs_in_the_workbench(folder, monkeypatch):
    """One App, one fake model made by a counting factory, its speed set per case. Fast: (1) a job
    runs to completion, u undoes its notes; (2) skip present keeps the written contexts; (3) the
    backend was made once and reused; (4) a missing model is one error notification; (5) an endpoint
    that is down stops the job at once; (6) extracted entities are reviewed, then applied and undone;
    (7) cancelling the review writes nothing. Slow (seconds per token, every job cancelled): (8) the
    palette's model commands (before any document, then with one) and (9) Cancel model job from
    the palette; (10) the UI stays responsive while a job runs, escape cancels it; (11) one job at a
    time. Then (12) the settings screen switches to an endpoint and the next job makes a new
    backend with it."""
    fake = StreamingNotesBackend(delay=0.001)
    made: list[ModelSettings] = []

    def factory(settings: ModelSettings) -> StreamingNotesBackend:
        made.append(settings)
        return fake

    app = WorkbenchApp(folder, backend_factory=factory)
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot)
        assert made == []  # nothing is created before a job needs it

        # (8) the palette offers the model commands once a document is open
        async def names() -> list[str]:
            provider = WorkbenchCommands(screen)
            return [hit.text for hit in [h async for h in provider.discover()]]

        assert "Contextualize document" not in await names()  # no document open yet
        assert "Model settings" in await names() and "Save" in await names()
        await open_document(app, pilot, "runbook.md")
        assert {"Contextualize document", "Extract entities", "Convert to CtxFST"} <= set(await names())
        assert "Cancel model job" not in await names()
        seen = notifications(app, monkeypatch)

        # (1) a job runs to completion, then u undoes its notes
        before = contexts(app, folder)
        progress: list[JobProgress] = []
        original = screen.query_one(JobStatus).show_progress
        monkeypatch.setattr(screen.query_one(JobStatus), "show_progress", lambda m: (progress.append(m), original(m)))
        await start_contextualize(app, pilot)
        await until(pilot, lambda: app.job is None)
        await settle(app, pilot)
        after = contexts(app, folder)
        assert after["ops:deploy"].startswith("Part of") and "Helm" in after["ops:deploy"]
        assert "PgBouncer" in after["ops:database"] and "allkeys-lru" in after["ops:cache"]
        assert after != before
        assert progress and progress[-1].done == progress[-1].total == 3
        # The open document's panes show the new notes, marked unsaved.
        assert "PgBouncer" in screen.query_one(SourceView).text.split("---", 2)[1]
        assert "Unsaved" in screen.query_one(DocumentSummary).text
        assert app.session.dirty_paths == {folder / "runbook.md"}
        done = [m for t, m, _ in seen if t == "Contextualized"]
        assert done and "3 notes" in done[0] and "u undoes it" in done[0]
        assert (folder / "runbook.md").read_text(encoding="utf-8") == RUNBOOK  # nothing saved

        await pilot.press("u")
        await settle(app, pilot)
        assert contexts(app, folder) == before
        assert not app.session.dirty_paths
        assert "Written by hand" in screen.query_one(SourceView).text

        # (2) skip present keeps the written contexts (then u, back to the file as it is)
        await start_contextualize(app, pilot, skip=True)
        await until(pilot, lambda: app.job is None)
        await settle(app, pilot)
        after = contexts(app, folder)
        assert after["ops:deploy"] == "Written by hand"
        assert after["ops:database"] and after["ops:cache"]
        await pilot.press("u")
        await settle(app, pilot)
        assert contexts(app, folder) == before and not app.session.dirty_paths

        # (3) two jobs so far, one backend
        assert made == [ModelSettings()]

        # (4) a missing model is one error notification
        fake.error = ModelNotFound("model file not found: /nowhere/model.gguf")
        seen.clear()
        await start_contextualize(app, pilot)
        await until(pilot, lambda: app.job is None)
        await settle(app, pilot)
        errors = [(t, m) for t, m, s in seen if s == "error"]
        assert errors == [("Contextualizing runbook.md: model error", "model file not found: /nowhere/model.gguf")]
        assert not app.session.dirty_paths

        # (5) an endpoint that is down stops the job at once
        fake.error = EndpointError("cannot reach http://127.0.0.1:9/v1: connection refused")
        seen.clear()
        calls = fake.calls
        await pilot.press("ctrl+e")
        await until(pilot, lambda: app.job is None)
        await settle(app, pilot)
        assert fake.calls - calls == 1  # not once per chunk
        errors = [m for _, m, s in seen if s == "error"]
        assert errors == ["cannot reach http://127.0.0.1:9/v1: connection refused"]
        assert not isinstance(app.screen, ProposalsScreen)
        fake.error = None

        # (6) extracted entities are reviewed, then applied and undone
        await pilot.press("ctrl+e")
        await until(pilot, lambda: isinstance(app.screen, ProposalsScreen))
        review = app.screen
        assert not app.session.dirty_paths  # nothing written yet
        new = review.query_one("#new-entities", SelectionList)
        ids = [new.get_option_at_index(i).value for i in range(new.option_count)]
        assert {"entity:redis", "entity:pgbouncer", "entity:postgresql"} <= set(ids)
        assert set(new.selected) == set(ids)  # everything ticked to start with
        new.deselect("entity:redis")
        await pilot.pause()
        assert "entity:redis" not in review.chosen
        await pilot.press("y")
        await settle(app, pilot)
        assert app.screen is screen
        doc = app.session.document(folder / "runbook.md")
        declared = {e.id for e in doc.entities}
        assert "entity:pgbouncer" in declared and "entity:redis" not in declared
        database = next(c for c in doc.chunks if c.id == "ops:database")
        assert "entity:pgbouncer" in database.data["entities"]
        assert "entity:pgbouncer" in screen.query_one(ChunkMap).text or "entity:pgbouncer" in screen.query_one(SourceView).text
        await pilot.press("u")
        await settle(app, pilot)
        assert "entity:pgbouncer" not in {e.id for e in app.session.document(folder / "runbook.md").entities}
        assert not app.session.dirty_paths

        # (7) cancelling the review writes nothing
        await pilot.press("ctrl+e")
        await until(pilot, lambda: isinstance(app.screen, ProposalsScreen))
        await pilot.press("escape")
        await settle(app, pilot)
        assert not isinstance(app.screen, ProposalsScreen)
        assert not app.session.dirty_paths
        assert made == [ModelSettings()]  # still the one backend

        # (9) a slow model: 1 s per token, the first note alone would take many seconds;
        # Cancel model job from the palette
        fake.delay = 1.0
        await start_contextualize(app, pilot)
        assert "Cancel model job" in await names()
        hits = [h async for h in WorkbenchCommands(screen).search("cancel job")]
        assert hits and str(hits[0].text) == "Cancel model job"
        hits[0].command()
        await until(pilot, lambda: app.job is None)
        assert all(hasattr(app if action.startswith("app.") else screen,
                           f"action_{action.removeprefix('app.').partition('(')[0]}")
                   for _, _, action, _ in COMMANDS)
        await settle(app, pilot)

        # (10) the UI stays responsive while a slow job runs, and escape cancels it
        fake.started.clear()
        fake.cancelled.clear()
        finished = fake.finished
        seen.clear()
        before = contexts(app, folder)
        await start_contextualize(app, pilot)
        assert app.job is not None and app.job.kind == "contextualize"
        status = screen.query_one(JobStatus)
        assert status.has_class("-running") and status.display
        await until(pilot, fake.started.is_set)
        assert fake.threads and threading.main_thread().name not in fake.threads  # the model runs in a worker
        assert "Contextualizing runbook.md" in status.text and "esc cancels" in status.text

        # Keys are handled while the model works: switch tabs, move the tree cursor.
        await pilot.press("2")
        assert screen.query_one(TabbedContent).active == "chunks-tab"
        await pilot.press("1")
        assert screen.query_one(TabbedContent).active == "source-tab"
        tree = screen.query_one(DocumentTree)
        tree.focus()
        await pilot.pause()
        line = tree.cursor_line
        await pilot.press("up")
        assert tree.cursor_line == line - 1
        await pilot.press("down")
        assert tree.cursor_line == line
        # all answered during the first model call (which takes ~20 s), not queued behind it
        assert fake.finished == finished and app.job is not None and not fake.cancelled.is_set()

        await pilot.press("escape")
        assert status.cancelling  # the line said "cancelling…" until the job stopped
        took = await until(pilot, lambda: app.job is None, timeout=3)
        assert took < 1.5 and fake.cancelled.is_set()
        await pilot.pause()
        assert not status.has_class("-running")
        assert any(title == "Cancelled" for title, _, _ in seen), seen
        assert contexts(app, folder) == before  # the interrupted note was not written
        assert not app.session.dirty_paths
        # escape is the focused widget's again once nothing runs
        assert not app.check_action("cancel_job", ())


        # (11) one job at a time
        seen.clear()
        await start_contextualize(app, pilot)
        job = app.job
        await pilot.press("ctrl+e")
        await pilot.press("ctrl+k")
        await pilot.pause()
        assert app.job is job and not isinstance(app.screen, ContextualizeScreen)
        assert sum("still running" in m for _, m, _ in seen) == 2
        await pilot.press("escape")
        await until(pilot, lambda: app.job is None)
        await settle(app, pilot)
        assert made == [ModelSettings()]  # still the one backend
        fake.delay = 0.001

        # (12) the settings screen: switch to an endpoint; the next job makes a new backend with it.
        await pilot.press("ctrl+o")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, ModelSettingsScreen)
        assert "fake" in modal.query_one("#current").render().plain  # backend_info of the live backend
        modal.query_one("#source-endpoint", RadioButton).value = True
        await pilot.pause()
        assert not modal.query_one("#endpoint", Input).disabled and modal.query_one("#model-path", Input).disabled
        modal.query_one("#endpoint", Input).value = "localhost:8080"
        modal.query_one("#model-name", Input).value = "qwen"
        modal.query_one("#n-ctx", Input).value = "2048"
        await pilot.click("#use")
        await pilot.pause()
        assert app.screen is modal  # not a URL: the form says so and stays
        assert "http://" in str(modal.query_one("#settings-error").render())
        modal.query_one("#endpoint", Input).value = "http://localhost:8080/v1"
        modal.query_one("#endpoint", Input).focus()
        await pilot.press("enter")  # Enter in a field is Use too
        await pilot.pause()
        assert app.screen is not modal, str(modal.query_one("#settings-error").render())
        wanted = ModelSettings("endpoint", endpoint="http://localhost:8080/v1", model="qwen", n_ctx=2048)
        assert app.models.settings == wanted
        assert wanted.backend_kwargs() == {"endpoint": "http://localhost:8080/v1", "model": "qwen", "n_ctx": 2048}
        await start_contextualize(app, pilot)
        await until(pilot, lambda: app.job is None)
        assert made == [ModelSettings(), wanted]


# ---------------------------------------------------------------- the self-test verdict on the settings screen

# One probe script for every model: a GGUF whose name says "crash" dies of SIGSEGV, any other answers.
# (stdlib only: ``python -S`` starts it without scanning site-packages)
PROBE_SCRIPT = """\
import json, os, signal, sys
if "crash" in os.path.basename(sys.argv[-1]):
    os.kill(os.getpid(), signal.SIGSEGV)
print(json.dumps({"ok": True, "system_info": "CPU : FAKE = 1"}))
"""


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama_cpp is not installed")
async def test_the_settings_screen_shows_the_chosen_ggufs_self_test_verdict(folder, tmp_path, monkeypatch):
    """The verdict kept by a real self-test (a real child: a script that answers, or one that dies of
    SIGSEGV) of the chosen GGUF is shown on ctrl+o; a GGUF never tested says so. One App: each GGUF
    in turn is chosen on the settings screen itself."""
    from ctxfst_tui.core.llm import probe
    from ctxfst_tui.core.llm.cache import default_cache

    monkeypatch.setenv(probe.ENV_CACHE, str(tmp_path / "verdicts" / "probe.json"))
    monkeypatch.setenv("CTXFST_TUI_COMPLETION_CACHE", str(tmp_path / "completions.sqlite"))
    script = tmp_path / "probe_script.py"
    script.write_text(PROBE_SCRIPT, encoding="utf-8")
    monkeypatch.setenv(probe.ENV_COMMAND, f"{sys.executable} -S {script}")
    (tmp_path / "models").mkdir()
    models = {}
    for n, kind in enumerate(("ok", "crash", "untested")):  # different bytes: each its own verdict key
        models[kind] = tmp_path / "models" / f"tiny-{kind}.gguf"
        models[kind].write_bytes(b"GGUF" + bytes([n]) * 64)
    ok = probe.self_test(models["ok"], hash_cache=default_cache())
    assert ok.outcome == "ok"
    assert probe.self_test(models["crash"], hash_cache=default_cache()).outcome == "crashed"
    wanted = {"ok": "ok (kept " + time.strftime("%Y-%m-%d %H:%M", time.localtime(ok.checked)) + ")",
              "crash": "crashed (SIGSEGV)", "untested": "not run yet"}
    app = WorkbenchApp(folder, backend_factory=lambda settings: StreamingNotesBackend(),
                       model_settings=ModelSettings("gguf", model_path=str(models["ok"])))
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        for kind in ("ok", "crash", "untested"):
            await pilot.press("ctrl+o")
            await pilot.pause()
            modal = app.screen
            assert isinstance(modal, ModelSettingsScreen), kind
            text = lambda: modal.query_one("#current").render().plain  # noqa: E731
            await until(pilot, lambda: "looking" not in text(), timeout=20)
            line = next(line for line in text().splitlines() if line.startswith("Self-test"))
            assert line[15:].strip() == wanted[kind], (kind, text())
            if kind == "untested":
                await pilot.press("escape")
                break
            # choose the next GGUF on the form, Enter in the field is Use
            following = models["crash" if kind == "ok" else "untested"]
            field = modal.query_one("#model-path", Input)
            field.value = str(following)
            field.focus()
            await pilot.press("enter")
            await until(pilot, lambda: app.screen is not modal)
            assert app.models.settings.model_path == str(following), kind
