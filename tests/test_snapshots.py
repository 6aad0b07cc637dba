"""Snapshot tests (SVG, pytest-textual-snapshot) of the workbench: each pane empty, loaded and in
its error state, the main screen in each shipped theme and at 80×24 and 200×60, and the help screen.

Update them with ``pytest tests/test_snapshots.py --snapshot-update`` and LOOK at every changed SVG
under ``tests/__snapshots__/test_snapshots/`` before committing it.

What keeps them deterministic:

- the documents are written by this file into a ``docs`` folder (the tree's root is named after
  the folder, so the folder's name is fixed) whose absolute path has the same length on every
  machine (:func:`fixed_length_home`): a finding that names a document by its absolute path is
  cut off on screen, but its length still sizes a horizontal scrollbar; the novel is the
  repository's own sample story;
- the header's sub-title (the folder's absolute path) is set to :data:`SUB_TITLE` after the last
  step; everything else names documents relative to the folder;
- a default :class:`Config` with a fixed (non-existent) path and a fresh :class:`State`: the
  user's config, theme and remembered layout never leak in (conftest also points the config and
  state dirs at temp folders); no disk watcher; a model factory that refuses, so nothing loads a model;
- the summary store of the novel is made by the core with a deterministic fake model *before*
  the app starts;
- nothing waits a fixed time: before the first step, after each one and before the picture, the
  app is waited for until it shows the state the picture is of (:func:`until_ready`): the folder scan
  finished (the tree holds every document this file wrote, each with its status), the workspace
  analysed at its current version, no worker left and every message handled; a step's own
  :func:`check` waits (bounded) for what it is about. A loaded machine only makes them slower;
- notifications stay up until the picture (a slow run must not let them expire first), and the
  cursors of inputs and text areas do not blink.
"""
from __future__ import annotations

import hashlib
import shutil
import time
from pathlib import Path
from typing import Awaitable, Callable

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, TextArea

from conftest import SAMPLE_DOCS
from ctxfst_tui.config import Config, State
from ctxfst_tui.core.llm.base import Completion
from ctxfst_tui.core.summary.session import NovelSession
from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.screens.modals.entity_edit import EntityEditScreen
from ctxfst_tui.ui.screens.modals.help import HelpScreen
from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen
from ctxfst_tui.ui.widgets.chunks.chunk_map import ChunkMap
from ctxfst_tui.ui.widgets.diagnosis.pane import DiagnosisTree
from ctxfst_tui.ui.widgets.document.tree import DocumentTree
from ctxfst_tui.ui.widgets.entities.panel import EntityTable
from ctxfst_tui.ui.widgets.summary.tree import SummaryPane

SIZE = (120, 40)  # tall enough for the overview (summary + findings) above the views
WIDE = (150, 42)  # summary beside the findings
SUB_TITLE = "~/docs"
CONFIG_FILE = Path("~/.config/ctxfst-tui/config.toml")  # named by the help screen; never read
STORY = SAMPLE_DOCS / "novels" / "the-keeper-of-gull-rock.txt"
PATH_LENGTH = 240  # characters of every snapshot folder's absolute path (…/docs)
STATE_WAIT = 60.0  # seconds a loaded machine may take to reach a state; a hang fails, bounded
DOCUMENT_SUFFIXES = (".md", ".txt")  # what this file writes as documents (not the .summary.json)

RUNBOOK = """\
---
title: "Platform runbook"
entities:
  - id: entity:redis
    name: Redis
    type: database
    aliases: [redis-server]
  - id: entity:postgres
    name: PostgreSQL
    type: database
    aliases: [Postgres]
chunks:
  - id: ops:cache
    tags: [Operations, Cache]
    entities: [entity:redis]
    context: "How the session cache is run, watched and flushed without logging every user out"
  - id: ops:database
    tags: [Operations, Database]
    entities: [entity:postgres]
    context: "How the primary database is backed up every night and restored on a spare host"
---

<Chunk id="ops:cache">
## Cache

Redis holds the sessions and the rate-limit counters. It runs as one primary with a replica;
the replica is promoted by hand when the primary has been unreachable for five minutes.

Flush only the `rl:*` keys after a bad deploy: flushing everything logs every user out.
</Chunk>

<Chunk id="ops:database">
## Database

PostgreSQL is backed up at 02:00 with `pg_dump` and the dump is copied to the backup bucket.
Restore it on the spare host first, check the row counts of the three largest tables, then
point the application at it.
</Chunk>
"""

FRONTEND = """\
---
title: "Frontend notes"
entities:
  - id: entity:javascript
    name: JavaScript
    type: skill
    aliases: [ECMAScript]
  - id: entity:js
    name: JS
    type: skill
  - id: entity:react
    name: React
    type: framework
chunks:
  - id: skill:react-components
    tags: [Frontend, React]
    entities: [entity:react, entity:js]
    context: "How the dashboard's React components are organised, typed and tested"
---

<Chunk id="skill:react-components">
## React components

Function components with hooks, written in JavaScript; shared state goes through a context.
</Chunk>
"""

BACKEND = """\
---
title: "Backend notes"
entities:
  - id: entity:js
    name: JS
    type: skill
  - id: entity:node
    name: Node.js
    type: platform
chunks:
  - id: skill:build-scripts
    tags: [Build]
    entities: [entity:js, entity:node, entity:webpack]
    context: "Which build steps are scripts run on Node.js"
---

<Chunk id="skill:build-scripts">
## Build scripts

The build runs JavaScript scripts on Node.js; each script has a test.
</Chunk>
"""

MEETING = """\
# Meeting note: search relevance

We agreed to measure retrieval before changing the chunker. The benchmark has forty queries,
written by the support team from real tickets, and each query names the documents a good answer
would cite.

## Actions

- Export the current documents with `ctxfst-tui export` and load them into the test index.
- Compare recall at 5 on the 40 benchmark queries, with and without the chunk contexts.
- Revisit chunk sizes only if recall drops below 0.8; start with the runbooks, which are long.

## Findings so far

Short chunks lose the heading that says what they are about, so a question about flushing the
cache finds the paragraph about sessions instead. Contexts written per chunk fixed most of these
in the first trial, but they cost one model call per chunk.

## Open questions

Should contexts mention the product name in every chunk, or only where it is ambiguous? Who
reviews the contexts the model writes before they are exported?
"""

BROKEN_YAML = """\
---
title: "Broken
entities: [entity:a, entity:b
chunks:
  - id: a:b
---

<Chunk id="a:b">
The frontmatter above never closes its quote or its list.
</Chunk>
"""

BINARY = b"PK\x03\x04\x14\x00\x00\x00\x08\x00exported\x00slides\x00\xff\xfe"


# ---------------------------------------------------------------- folders


def fixed_length_home(tmp_path: Path) -> Path:
    """A folder under ``tmp_path`` whose ``docs`` has an absolute path of :data:`PATH_LENGTH`
    characters, whatever the user name, TMPDIR or pytest's run number."""
    base = str(tmp_path.resolve())
    pad = PATH_LENGTH - len(base) - len("/") - len("/docs")
    assert 0 < pad <= 255, f"{base}: too long a temporary folder for a {PATH_LENGTH}-character path"
    home = tmp_path / ("p" * pad)
    home.mkdir()
    return home


def make_folder(tmp_path: Path, *, broken: bool = False, novel: bool = False) -> Path:
    """``docs/``: a valid runbook, two notes whose entities look alike, a plain Markdown note;
    ``broken``: a document whose YAML does not parse and a binary one; ``novel``: a manuscript
    (with a summary store) and a manuscript that is not text."""
    folder = fixed_length_home(tmp_path) / "docs"
    (folder / "notes").mkdir(parents=True)
    (folder / "platform-runbook.ctxfst.md").write_text(RUNBOOK, encoding="utf-8")
    (folder / "frontend.md").write_text(FRONTEND, encoding="utf-8")
    (folder / "backend.md").write_text(BACKEND, encoding="utf-8")
    (folder / "notes" / "meeting.md").write_text(MEETING, encoding="utf-8")
    if broken:
        (folder / "broken-yaml.md").write_text(BROKEN_YAML, encoding="utf-8")
        (folder / "notes" / "slides-export.md").write_bytes(BINARY)
    if novel:
        write_novel(folder / "novels")
    return folder


def empty_folder(tmp_path: Path) -> Path:
    folder = fixed_length_home(tmp_path) / "docs"
    folder.mkdir()
    return folder


class ScriptedSummarizer:
    """A deterministic fake model for the summary store: answers by call number (``answers``),
    otherwise a name-free sentence that depends only on the prompt."""

    name = "fake"
    chat = False
    model_id = "fake-summarizer"
    context_size = 4096

    def __init__(self, answers: dict[int, str] | None = None) -> None:
        self.calls = 0
        self.answers = dict(answers or {})

    def count_tokens(self, text: str) -> int:
        return len(text.split()) * 4 // 3 + 1

    def complete(self, prompt, *, max_tokens=None, stop=None, temperature=None, cancel=None, on_token=None):
        self.calls += 1
        text = self.answers.get(self.calls)
        if text is None:
            tag = hashlib.sha256(prompt.encode()).hexdigest()[:6]
            text = f" moves the story on in part {tag} and everyone there talks about it."
        return Completion(text, self.count_tokens(prompt), len(text.split()), "stop")


EDITED_PHRASE = "like paper left in the sun"  # the middle of chapter two's first scene


def write_novel(novels: Path) -> None:
    """``story.txt`` with a ``story.summary.json`` that has every mark: chapter one done but its
    second scene failed (the model echoed the source twice), chapter two done and then made stale
    by an edit, chapter three and the book pending, the front matter skipped. ``scan.txt``: not text."""
    novels.mkdir(parents=True)
    path = novels / "story.txt"
    shutil.copy(STORY, path)
    session = NovelSession.open(path)
    ms = session.manuscript
    echo = " " + ms.node_text(ms.root.find("c1.s2"))[:300]
    # calls: c1.s1, c1.s2 (rejected), c1.s2 again (rejected: failed), c1
    fake = ScriptedSummarizer({2: echo, 3: echo})
    session.summarize(fake, only="c1")
    session.summarize(ScriptedSummarizer(), only="c2")
    statuses = {n.id: n.status for n in session.manuscript.root.walk()}
    assert statuses["c1.s2"] == "failed" and statuses["c1"] == "done" and statuses["c2"] == "done", statuses
    text = path.read_text(encoding="utf-8")
    assert text.count(EDITED_PHRASE) == 1
    path.write_text(text.replace(EDITED_PHRASE, "like paper left by the fire"), encoding="utf-8")
    (novels / "scan.txt").write_bytes(BINARY)


# ---------------------------------------------------------------- driving the app


def _no_model(settings):
    raise AssertionError("a snapshot test must not load a model")


def make_app(folder: Path, theme: str | None = None) -> WorkbenchApp:
    app = WorkbenchApp(folder, backend_factory=_no_model, config=Config(CONFIG_FILE, theme=theme, watch=False),
                       state=State(), watch_disk=False)
    notify = app.notify

    def notify_until_the_picture(message, *, timeout=None, **kwargs):
        """Notifications stay up until the picture: a slow run must not let them expire first."""
        return notify(message, timeout=3600, **kwargs)

    app.notify = notify_until_the_picture
    return app


Step = Callable[[Pilot], Awaitable[None]]


def documents_written(folder: Path) -> set[Path]:
    """The documents this file wrote into ``folder``: what the tree must list once the scan is done."""
    return {p.resolve() for p in folder.rglob("*") if p.is_file() and p.suffix in DOCUMENT_SUFFIXES}


def workbench_of(app: WorkbenchApp) -> WorkbenchScreen:
    return next(s for s in app.screen_stack if isinstance(s, WorkbenchScreen))


def _quiet(app: WorkbenchApp) -> bool:
    """No worker left and no message waiting anywhere (app, screens, widgets)."""
    if any(w.state.name in ("PENDING", "RUNNING") for w in app.workers):
        return False
    nodes = [app]
    for screen in app.screen_stack:
        nodes += [screen, *screen.walk_children(with_self=False)]
    return all(node._message_queue.empty() for node in nodes)


def why_not_ready(app: WorkbenchApp) -> str | None:
    """What the workbench has not finished yet, or None when it shows a settled state."""
    screen = workbench_of(app)
    tree = screen.query_one(DocumentTree)
    expected = documents_written(app.folder)
    listed = {p.resolve() for p in tree.documents}
    if listed != expected:
        return f"the tree lists {len(listed)} of {len(expected)} documents"
    missing = [p for p in tree.documents if tree.status(p) is None]
    if missing:
        return f"{len(missing)} documents without a status"
    if not screen.session.ready:
        return "the workspace is not loaded"
    if screen._analysed_version != screen.session.version:
        return f"the workspace is analysed at version {screen._analysed_version}, not {screen.session.version}"
    if not _quiet(app):
        return f"workers or messages pending: {[w.name for w in app.workers]}"
    return None


async def until_ready(pilot: Pilot) -> None:
    """Until :func:`why_not_ready` says nothing twice in a row, a short pause apart (bounded)."""
    deadline = time.monotonic() + STATE_WAIT
    calm = 0
    reason: str | None = "not checked"
    while time.monotonic() < deadline:
        await pilot.pause()
        reason = why_not_ready(pilot.app)
        calm = calm + 1 if reason is None else 0
        if calm >= 2:
            return
        if reason is not None:
            await pilot.pause(0.02)
    raise AssertionError(f"the workbench did not settle in {STATE_WAIT:.0f} s: {reason}")


def open_doc(relative: str) -> Step:
    """Walk the tree's cursor to ``relative`` with up/down and press enter, as a user would."""

    async def step(pilot: Pilot) -> None:
        app = pilot.app
        tree = app.screen.query_one(DocumentTree)
        target = app.folder / relative
        tree.focus()
        await pilot.pause()
        order = [tree.get_node_at_line(i).data for i in range(tree.last_line + 1)]
        assert target in order, f"{relative} is not in the tree"
        moves = order.index(target) - tree.cursor_line
        await pilot.press(*(["down" if moves > 0 else "up"] * abs(moves)), "enter")
        await until_ready(pilot)
        assert app.screen.current == target

    return step


def press(*keys: str) -> Step:
    async def step(pilot: Pilot) -> None:
        await pilot.press(*keys)

    return step


def check(predicate: Callable[[WorkbenchApp], bool], what: str) -> Step:
    """Wait (bounded) until ``predicate(app)`` holds; fail rather than snapshot a half-made screen."""

    async def step(pilot: Pilot) -> None:
        deadline = time.monotonic() + STATE_WAIT
        while time.monotonic() < deadline:
            if predicate(pilot.app):
                return
            await pilot.pause(0.05)
        raise AssertionError(f"not on screen after {STATE_WAIT:.0f} s: {what}")

    return step


def prepare(*steps: Step) -> Callable[[Pilot], Awaitable[None]]:
    """The ``run_before`` of a snapshot: start, each step, then freeze what would move."""

    async def run_before(pilot: Pilot) -> None:
        app = pilot.app
        await until_ready(pilot)
        for step in steps:
            await step(pilot)
            await until_ready(pilot)
        for widget in app.screen.query(Input):
            widget.cursor_blink = False
        for widget in app.screen.query(TextArea):
            widget.cursor_blink = False
        app.sub_title = SUB_TITLE  # the folder's absolute path would differ on every run
        await until_ready(pilot)

    return run_before


def shot(snap_compare, folder: Path, *steps: Step, size: tuple[int, int] = SIZE, theme: str | None = None) -> bool:
    return snap_compare(make_app(folder, theme), terminal_size=size, run_before=prepare(*steps))


def in_tab(tab: str) -> Callable[[WorkbenchApp], bool]:
    return lambda app: str(app.screen.query_one("#lower").active) == tab


# ---------------------------------------------------------------- document tree


def test_tree_empty_folder(snap_compare, tmp_path):
    folder = empty_folder(tmp_path)
    assert shot(snap_compare, folder, check(lambda app: app.screen.query_one(DocumentTree).border_subtitle == "no documents",
                                            "an empty tree"))


def test_tree_loaded(snap_compare, tmp_path):
    folder = make_folder(tmp_path)
    assert shot(snap_compare, folder, check(lambda app: len(app.screen.query_one(DocumentTree).documents) == 4, "4 documents"))


def test_tree_broken_documents_marked(snap_compare, tmp_path):
    folder = make_folder(tmp_path, broken=True)

    def marked(app: WorkbenchApp) -> bool:
        tree = app.screen.query_one(DocumentTree)
        status = tree.status(folder / "broken-yaml.md")
        binary = tree.status(folder / "notes" / "slides-export.md")
        return status is not None and status.state == "errors" and binary is not None and binary.state == "errors"

    assert shot(snap_compare, folder, check(marked, "the broken documents marked ✗"))


# ---------------------------------------------------------------- source view + overview


def test_source_no_document(snap_compare, tmp_path):
    folder = make_folder(tmp_path)
    assert shot(snap_compare, folder, press("1"), check(in_tab("source-tab"), "the Source tab"))


def test_source_valid_document(snap_compare, tmp_path):
    folder = make_folder(tmp_path)
    assert shot(snap_compare, folder, open_doc("platform-runbook.ctxfst.md"))


def test_source_broken_yaml_with_findings(snap_compare, tmp_path):
    folder = make_folder(tmp_path, broken=True)
    assert shot(snap_compare, folder, open_doc("broken-yaml.md"))


# ---------------------------------------------------------------- chunk preview


def test_chunks_empty(snap_compare, tmp_path):
    folder = make_folder(tmp_path)
    assert shot(snap_compare, folder, press("2"), check(in_tab("chunks-tab"), "the Chunks tab"))


def test_chunks_plain_note_rechunked(snap_compare, tmp_path):
    folder = make_folder(tmp_path)
    assert shot(
        snap_compare, folder,
        open_doc("notes/meeting.md"),
        press("2", "s", "6", "4", "enter"),  # a 64-token budget: typed, then back to the chunk map
        # the 0.3 s debounce, then the chunker's worker (waited for after the check)
        check(lambda app: app.screen.budget is not None and app.screen.budget.size == 64, "the 64-token budget applied"),
        check(lambda app: len(app.screen.query_one(ChunkMap).spans) > 3, "the note in more than 3 chunks"),
    )


def test_chunks_document_that_cannot_be_chunked(snap_compare, tmp_path):
    folder = make_folder(tmp_path, broken=True)
    assert shot(snap_compare, folder, open_doc("notes/slides-export.md"), press("2"), check(in_tab("chunks-tab"), "the Chunks tab"))


# ---------------------------------------------------------------- entity panel


def test_entities_empty_workspace(snap_compare, tmp_path):
    folder = empty_folder(tmp_path)
    assert shot(snap_compare, folder, press("3"), check(in_tab("entities-tab"), "the Entities tab"))


def test_entities_loaded_with_suggested_merges(snap_compare, tmp_path):
    folder = make_folder(tmp_path)
    assert shot(snap_compare, folder, press("3"), check(lambda app: len(app.screen.query_one(EntityTable).ids) >= 6, "the entities"))


def test_entities_edit_refused(snap_compare, tmp_path):
    """Renaming ``entity:js`` to an id that exists is refused: an error notification, nothing changed."""
    folder = make_folder(tmp_path)

    async def to_js(pilot: Pilot) -> None:
        table = pilot.app.screen.query_one(EntityTable)
        moves = table.ids.index("entity:js") - table.cursor_row
        await pilot.press(*(["down" if moves > 0 else "up"] * abs(moves)))

    assert shot(
        snap_compare, folder,
        press("3"), to_js,
        press("e"),
        check(lambda app: isinstance(app.screen, EntityEditScreen) and app.focused is app.screen.query_one("#entity-name"),
              "the edit form, the name field focused"),
        press("shift+tab", *"entity:javascript", "enter"),  # the id field: an id that exists
        check(lambda app: any(n.title == "Not edited" for n in app._notifications), "the refusal"),
    )


# ---------------------------------------------------------------- diagnosis


def test_diagnosis_no_findings(snap_compare, tmp_path):
    folder = empty_folder(tmp_path)
    assert shot(snap_compare, folder, press("4"),
                check(lambda app: not app.screen.query_one(DiagnosisTree).items and in_tab("diagnosis-tab")(app), "no findings"))


def test_diagnosis_findings_grouped(snap_compare, tmp_path):
    folder = make_folder(tmp_path)
    assert shot(snap_compare, folder, press("4"), check(lambda app: bool(app.screen.query_one(DiagnosisTree).items), "findings"))


def test_diagnosis_document_that_fails_to_parse(snap_compare, tmp_path):
    folder = make_folder(tmp_path, broken=True)

    async def to_yaml_error(pilot: Pilot) -> None:
        tree = pilot.app.screen.query_one(DiagnosisTree)
        for _ in range(len(tree.items)):
            await pilot.press("n")
            if tree.current is not None and tree.current.rule == "yaml-syntax":
                return
        raise AssertionError("no yaml-syntax finding")

    assert shot(snap_compare, folder, press("4"), to_yaml_error)


# ---------------------------------------------------------------- summary tree


def summary_view_shown(app: WorkbenchApp) -> bool:
    return app.screen.query_one(SummaryPane).view is not None


def test_summary_no_document(snap_compare, tmp_path):
    folder = make_folder(tmp_path)
    assert shot(snap_compare, folder, press("5"), check(in_tab("summary-tab"), "the Summary tab"))


def test_summary_not_a_manuscript(snap_compare, tmp_path):
    folder = make_folder(tmp_path)
    assert shot(snap_compare, folder, open_doc("platform-runbook.ctxfst.md"), press("5"),
                check(lambda app: "not a manuscript" in app.screen.query_one(SummaryPane).status_text, "not a manuscript"))


def test_summary_novel_with_marks(snap_compare, tmp_path):
    """Done (✓), failed (✗, the highlighted node), stale (~), pending (·) and skipped (-) nodes."""
    folder = make_folder(tmp_path, novel=True)

    async def to_failed_scene(pilot: Pilot) -> None:
        tree = pilot.app.screen.query_one(SummaryPane).tree
        order = [tree.get_node_at_line(i).data for i in range(tree.last_line + 1)]
        moves = order.index("c1.s2") - tree.cursor_line
        await pilot.press(*(["down" if moves > 0 else "up"] * abs(moves)))

    assert shot(
        snap_compare, folder,
        open_doc("novels/story.txt"), press("5"), check(summary_view_shown, "the novel's tree"),
        press("e"),  # every chapter open
        to_failed_scene,
        check(lambda app: app.screen.query_one(SummaryPane).current.id == "c1.s2", "the failed scene highlighted"),
    )


def test_summary_unreadable_manuscript(snap_compare, tmp_path):
    folder = make_folder(tmp_path, novel=True)
    assert shot(snap_compare, folder, open_doc("novels/scan.txt"), press("5"),
                check(lambda app: app.screen.query_one(SummaryPane).has_class("-error"), "the error"))


# ---------------------------------------------------------------- help, main screen, themes


def test_help_screen(snap_compare, tmp_path):
    folder = make_folder(tmp_path)
    assert shot(snap_compare, folder, open_doc("platform-runbook.ctxfst.md"), press("question_mark"),
                check(lambda app: isinstance(app.screen, HelpScreen), "the help screen"))


def test_main_screen_80x24(snap_compare, tmp_path):
    folder = make_folder(tmp_path, broken=True)
    assert shot(snap_compare, folder, open_doc("platform-runbook.ctxfst.md"), size=(80, 24))


def test_main_screen_200x60(snap_compare, tmp_path):
    folder = make_folder(tmp_path, broken=True)
    assert shot(snap_compare, folder, open_doc("platform-runbook.ctxfst.md"), size=(200, 60))


@pytest.mark.parametrize("theme", ["ctxfst-dark", "ctxfst-light", "ctxfst-high-contrast"])
def test_main_screen_theme(snap_compare, tmp_path, theme):
    """A document with an error open: the tree's ✓ ▲ ✗, the verdict and a finding in each theme's colours."""
    folder = make_folder(tmp_path, broken=True)
    assert shot(snap_compare, folder, open_doc("backend.md"),
                check(lambda app: app.theme == theme, f"the {theme} theme"), size=WIDE, theme=theme)
