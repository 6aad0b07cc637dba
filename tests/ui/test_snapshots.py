"""Snapshot tests (SVG, pytest-textual-snapshot) of the workbench: each pane empty, loaded and in
its error state, the main screen in each shipped theme and at 80×24 and 200×60, and the help screen.

Each test starts ONE app on one folder and takes several pictures in sequence (:class:`Shots`),
each compared with its own stored SVG, ``<test>[<picture>].svg``, as ``snap_compare`` compares
(the plugin's SVG extension, its failure report). The order is chosen so that nothing a picture
shows is left over from an earlier step: a test's docstring says what constrains it.

Update them with ``pytest tests/ui/test_snapshots.py --snapshot-update`` and LOOK at every changed SVG
under ``tests/ui/__snapshots__/test_snapshots/`` before committing it.

What keeps them deterministic:

- the documents are written by this file into a ``docs`` folder (the tree's root is named after
  the folder, so the folder's name is fixed) whose absolute path has the same length on every
  machine (:func:`fixed_length_home`): a finding that names a document by its absolute path is
  cut off on screen, but its length still sizes a horizontal scrollbar; the novel is the
  repository's own sample story;
- the header's sub-title (the folder's absolute path) is set to :data:`SUB_TITLE` before each
  picture; everything else names documents relative to the folder;
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
import inspect
import pickle
import shutil
import time
from pathlib import Path
from typing import Awaitable, Callable

import pytest
from pytest_textual_snapshot import PseudoApp, PseudoConsole, SVGImageExtension, node_to_report_path
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Input, TextArea

from conftest import SAMPLE_DOCS
from pilot import notifications
from ctxfst_tui.config import Config, State
from ctxfst_tui.core.llm.base import Completion
from ctxfst_tui.core.summary.session import NovelSession
from ctxfst_tui.core.summary.summarizer import SummarySettings
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
    session.summarize(fake, SummarySettings(extractive_fallback=False), only="c1")  # a failed node, to show ✗
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
    return all(node.message_queue_size == 0 for node in nodes)


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
    if screen.analysed_version != screen.session.version:
        return f"the workspace is analysed at version {screen.analysed_version}, not {screen.session.version}"
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


def freeze(app: WorkbenchApp) -> None:
    """Stop what would move between two runs: blinking cursors, the folder's absolute path."""
    for widget in app.screen.query(Input):
        widget.cursor_blink = False
    for widget in app.screen.query(TextArea):
        widget.cursor_blink = False
    app.sub_title = SUB_TITLE  # the folder's absolute path would differ on every run


def in_tab(tab: str) -> Callable[[WorkbenchApp], bool]:
    return lambda app: str(app.screen.query_one("#lower").active) == tab


class Shots:
    """Several pictures of ONE app session, each compared with its stored SVG exactly as
    ``snap_compare`` does: the plugin's :class:`SVGImageExtension` (so its normalisation) on the
    test's syrupy ``snapshot``, named ``<test>[<name>].svg``, and a mismatch goes into the plugin's
    failure report. :meth:`run` starts the app as ``take_svg_screenshot`` does (headless, tooltips
    and notifications on, the title read before the start); :meth:`take` waits as it does before
    the picture. Every picture is compared, then the test fails naming each one that differed."""

    def __init__(self, snapshot, request) -> None:
        self.snapshot = snapshot.use_extension(SVGImageExtension)
        self.request = request
        self.failed: list[str] = []
        self.taken: list[str] = []
        self.title = ""

    def run(self, app: WorkbenchApp, size: tuple[int, int] = SIZE):
        self.title = app.title
        return app.run_test(headless=True, size=size, tooltips=True, notifications=True)

    async def take(self, pilot: Pilot, name: str, *steps: Step) -> None:
        """``steps``, each followed by :func:`until_ready`, then the picture ``name``."""
        app = pilot.app
        await until_ready(pilot)
        for step in steps:
            await step(pilot)
            await until_ready(pilot)
        freeze(app)
        await until_ready(pilot)
        # what take_svg_screenshot does between run_before and the picture
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        svg = app.export_screenshot(title=self.title, simplify=True)
        passed = self.snapshot(name=name) == svg
        self.taken.append(name)
        if not passed:
            self.failed.append(name)
        self._report(name, passed, svg)

    def _report(self, name: str, passed: bool, svg: str) -> None:
        """What snap_compare leaves for the plugin's HTML failure report, one file per picture."""
        result = self.snapshot.executions[self.snapshot.num_executions - 1]
        exists = result.final_data is not None
        node = self.request.node
        full_path, line_number, test_name = node.reportinfo()
        console = Console(legacy_windows=False, force_terminal=True)
        p_app = PseudoApp(PseudoConsole(console.legacy_windows, console.size))
        data = (passed, str(result.final_data) if exists else "", svg, p_app, full_path, line_number,
                f"{test_name}[{name}]", inspect.getdoc(node.function) or "", "", exists)
        path = node_to_report_path(node)
        path.with_name(f"{path.name}_{name}").write_bytes(pickle.dumps(data))

    def check(self, expected: list[str]) -> None:
        assert self.taken == expected, f"pictures taken: {self.taken}"
        assert not self.failed, f"snapshots that differ: {self.failed}"


@pytest.fixture
def shots(snapshot, request) -> Shots:
    return Shots(snapshot, request)


# ---------------------------------------------------------------- an empty folder


async def test_empty_folder(shots, tmp_path):
    """The tree, the Entities tab and the Diagnosis tab of a folder without documents."""
    app = make_app(empty_folder(tmp_path))
    async with shots.run(app) as pilot:
        await shots.take(pilot, "tree_empty_folder",
                         check(lambda app: app.screen.query_one(DocumentTree).border_subtitle == "no documents",
                               "an empty tree"))
        await shots.take(pilot, "entities_empty_workspace", press("3"), check(in_tab("entities-tab"), "the Entities tab"))
        await shots.take(pilot, "diagnosis_no_findings", press("4"),
                         check(lambda app: not app.screen.query_one(DiagnosisTree).items and in_tab("diagnosis-tab")(app),
                               "no findings"))
    shots.check(["tree_empty_folder", "entities_empty_workspace", "diagnosis_no_findings"])


# ---------------------------------------------------------------- the plain folder


async def to_js(pilot: Pilot) -> None:
    table = pilot.app.screen.query_one(EntityTable)
    moves = table.ids.index("entity:js") - table.cursor_row
    await pilot.press(*(["down" if moves > 0 else "up"] * abs(moves)))


async def test_plain_folder(shots, tmp_path):
    """Each pane with no document open (the tree loaded, the findings grouped), then the runbook
    open (its source, the help screen over it, the Summary tab: not a manuscript) and the meeting
    note re-chunked with a 64-token budget. The Source, Chunks and Diagnosis tabs take the focus from
    the tree, so they come after the Summary tab, which leaves it there; the Entities tab marks documents in the tree
    (◆), so its pictures have an app of their own: :func:`test_plain_folder_entities`."""
    app = make_app(make_folder(tmp_path))
    async with shots.run(app) as pilot:
        await shots.take(pilot, "tree_loaded",
                         check(lambda app: len(app.screen.query_one(DocumentTree).documents) == 4, "4 documents"))
        await shots.take(pilot, "summary_no_document", press("5"), check(in_tab("summary-tab"), "the Summary tab"))
        await shots.take(pilot, "source_no_document", press("1"), check(in_tab("source-tab"), "the Source tab"))
        await shots.take(pilot, "chunks_empty", press("2"), check(in_tab("chunks-tab"), "the Chunks tab"))
        await shots.take(pilot, "diagnosis_findings_grouped", press("4"),
                         check(lambda app: bool(app.screen.query_one(DiagnosisTree).items), "findings"))
        await shots.take(pilot, "source_valid_document", press("1"), open_doc("platform-runbook.ctxfst.md"))
        await shots.take(pilot, "help_screen", press("question_mark"),
                         check(lambda app: isinstance(app.screen, HelpScreen), "the help screen"))
        await shots.take(pilot, "summary_not_a_manuscript", press("escape"),
                         check(lambda app: isinstance(app.screen, WorkbenchScreen), "the help screen closed"), press("5"),
                         check(lambda app: "not a manuscript" in app.screen.query_one(SummaryPane).status_text,
                               "not a manuscript"))
        await shots.take(
            pilot, "chunks_plain_note_rechunked",
            press("1"), open_doc("notes/meeting.md"),
            press("2", "s", "6", "4", "enter"),  # a 64-token budget: typed, then back to the chunk map
            # the 0.3 s debounce, then the chunker's worker (waited for after the check)
            check(lambda app: app.screen.budget is not None and app.screen.budget.size == 64, "the 64-token budget applied"),
            check(lambda app: len(app.screen.query_one(ChunkMap).spans) > 3, "the note in more than 3 chunks"),
        )
    shots.check(["tree_loaded", "summary_no_document", "source_no_document", "chunks_empty", "diagnosis_findings_grouped",
                 "source_valid_document", "help_screen", "summary_not_a_manuscript", "chunks_plain_note_rechunked"])


async def test_plain_folder_entities(shots, tmp_path):
    """The entities with suggested merges, then an edit refused: renaming ``entity:js`` to an id
    that exists: an error notification, nothing changed."""
    app = make_app(make_folder(tmp_path))
    seen = notifications(app)
    async with shots.run(app) as pilot:
        await shots.take(pilot, "entities_loaded_with_suggested_merges", press("3"),
                         check(lambda app: len(app.screen.query_one(EntityTable).ids) >= 6, "the entities"))
        await shots.take(
            pilot, "entities_edit_refused",
            to_js,
            press("e"),
            check(lambda app: isinstance(app.screen, EntityEditScreen) and app.focused is app.screen.query_one("#entity-name"),
                  "the edit form, the name field focused"),
            press("shift+tab", *"entity:javascript", "enter"),  # the id field: an id that exists
            check(lambda app: any(title == "Not edited" for title, _, _ in seen), "the refusal"),
        )
    shots.check(["entities_loaded_with_suggested_merges", "entities_edit_refused"])


# ---------------------------------------------------------------- broken documents


async def to_yaml_error(pilot: Pilot) -> None:
    tree = pilot.app.screen.query_one(DiagnosisTree)
    for _ in range(len(tree.items)):
        await pilot.press("n")
        if tree.current is not None and tree.current.rule == "yaml-syntax":
            return
    raise AssertionError("no yaml-syntax finding")


async def test_broken_folder(shots, tmp_path):
    """Broken documents: marked ✗ in the tree, the finding of a document that fails to parse (no
    document open), the broken YAML's source and findings, the binary document that cannot be
    chunked; then the main screen: the runbook open at 80×24 and 200×60, and a document with an
    error open (the tree's ✓ ▲ ✗, the verdict and a finding) in each shipped theme's colours."""
    folder = make_folder(tmp_path, broken=True)

    def marked(app: WorkbenchApp) -> bool:
        tree = app.screen.query_one(DocumentTree)
        status = tree.status(folder / "broken-yaml.md")
        binary = tree.status(folder / "notes" / "slides-export.md")
        return status is not None and status.state == "errors" and binary is not None and binary.state == "errors"

    def sized(size: tuple[int, int]) -> Step:
        return check(lambda app: app.size == size, f"{size[0]}×{size[1]}")

    app = make_app(folder)
    async with shots.run(app) as pilot:
        await shots.take(pilot, "tree_broken_documents_marked", check(marked, "the broken documents marked ✗"))
        await shots.take(pilot, "diagnosis_document_that_fails_to_parse", press("4"), to_yaml_error)
        await shots.take(pilot, "source_broken_yaml_with_findings", press("1"), open_doc("broken-yaml.md"))
        await shots.take(pilot, "chunks_document_that_cannot_be_chunked", open_doc("notes/slides-export.md"), press("2"),
                         check(in_tab("chunks-tab"), "the Chunks tab"))
        await pilot.resize_terminal(80, 24)
        await shots.take(pilot, "main_screen_80x24", press("1"), sized((80, 24)), open_doc("platform-runbook.ctxfst.md"))
        await pilot.resize_terminal(200, 60)
        await shots.take(pilot, "main_screen_200x60", sized((200, 60)))
        await pilot.resize_terminal(*WIDE)
        opened = [sized(WIDE), open_doc("backend.md")]  # once: the themes change only the colours
        for theme in ["ctxfst-dark", "ctxfst-light", "ctxfst-high-contrast"]:
            app.theme = theme
            await shots.take(pilot, f"main_screen_theme-{theme}", *opened,
                             check(lambda app: app.theme == theme, f"the {theme} theme"))
            opened = []
    shots.check(["tree_broken_documents_marked", "diagnosis_document_that_fails_to_parse",
                 "source_broken_yaml_with_findings", "chunks_document_that_cannot_be_chunked", "main_screen_80x24",
                 "main_screen_200x60", "main_screen_theme-ctxfst-dark", "main_screen_theme-ctxfst-light",
                 "main_screen_theme-ctxfst-high-contrast"])


# ---------------------------------------------------------------- summary tree


def summary_view_shown(app: WorkbenchApp) -> bool:
    return app.screen.query_one(SummaryPane).view is not None


async def to_failed_scene(pilot: Pilot) -> None:
    tree = pilot.app.screen.query_one(SummaryPane).tree
    order = [tree.get_node_at_line(i).data for i in range(tree.last_line + 1)]
    moves = order.index("c1.s2") - tree.cursor_line
    await pilot.press(*(["down" if moves > 0 else "up"] * abs(moves)))


async def test_novel_folder(shots, tmp_path):
    """A manuscript that is not text: the summary pane's error; the novel: done (✓), failed (✗, the
    highlighted node), stale (~), pending (·) and skipped (-) nodes."""
    app = make_app(make_folder(tmp_path, novel=True))
    async with shots.run(app) as pilot:
        await shots.take(pilot, "summary_unreadable_manuscript", open_doc("novels/scan.txt"), press("5"),
                         check(lambda app: app.screen.query_one(SummaryPane).has_class("-error"), "the error"))
        await shots.take(
            pilot, "summary_novel_with_marks",
            press("1"), open_doc("novels/story.txt"), press("5"), check(summary_view_shown, "the novel's tree"),
            press("e"),  # every chapter open
            to_failed_scene,
            check(lambda app: app.screen.query_one(SummaryPane).current.id == "c1.s2", "the failed scene highlighted"),
        )
    shots.check(["summary_unreadable_manuscript", "summary_novel_with_marks"])
