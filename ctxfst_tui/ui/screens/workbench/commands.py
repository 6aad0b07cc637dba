"""The command palette (ctrl+p) entries of the workbench: every action, and "Open …" for each document.

The provider is the workbench screen's (``WorkbenchScreen.COMMANDS``). Each entry runs an
action string through Textual's action system, the way a key binding does, so a palette
command and its key do exactly the same thing: a bare name is the screen's action, ``app.``
the App's. Theme, Keys, Quit and Screenshot come from Textual's own system commands.
"""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from ctxfst_tui.core.summary.manuscript import is_manuscript

if TYPE_CHECKING:
    from ctxfst_tui.ui.app import WorkbenchApp
    from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen


class Command(NamedTuple):
    name: str
    help: str
    action: str  # the action its key runs: the workbench screen's, or "app.…"
    needs: str  # when it is offered: "document" an open document, "job" a running job,
    #             "novel" an open document that can be a manuscript (.txt or .md), "" always


COMMANDS: list[Command] = [
    Command("Contextualize document", "Write a retrieval note into the context of each chunk of the open document (model job)",
            "contextualize", "document"),
    Command("Extract entities", "Propose entities and chunk links for the open document (model job), review them, then apply",
            "extract_entities", "document"),
    Command("Summarize selected node", "Summarize the summary tree's highlighted node and what is under it (model job)",
            "summarize_node", "novel"),
    Command("Summarize book", "Summarize the whole novel shown in the Summary tab: scenes, chapters, the book (model job)",
            "summarize_book", "novel"),
    Command("Cancel model job", "Stop the running model job (escape)", "app.cancel_job", "job"),
    Command("Model settings", "Backend, model path, context size, threads; bundled model, another GGUF or an endpoint",
            "app.model_settings", ""),
    Command("Save", "Save every document with unsaved changes", "save", ""),
    Command("Undo", "Undo the last edit of the session", "undo", ""),
    Command("Redo", "Redo the last undone edit", "redo", ""),
    Command("Convert to CtxFST", "Write the open plain document as a CtxFST document with the chunks shown", "convert", "document"),
    Command("Re-chunk", "The chunk preview with its size field focused: type a budget, the document re-chunks", "rechunk", "document"),
    Command("Validate folder", "Check every document of the folder against the CtxFST rules again", "validate", ""),
    Command("Diagnose workspace", "Run the quality diagnosis on the workspace as it is in memory; show the report", "diagnose", ""),
    Command("Apply fix", "Apply the fix of the finding highlighted in the Diagnosis tab (undoable)", "apply_fix", ""),
    Command("Search the workspace", "The Retrieval tab: ask a question, see the chunks that answer it and why; the scoreboard (6)",
            "show_tab('retrieval-tab')", ""),
    Command("Merge entities", "Merge the suggestion highlighted in the Entities tab, after its diff", "merge", ""),
    Command("Toggle document tree", "Hide or show the document tree (ctrl+b)", "toggle_tree", ""),
    Command("Toggle overview", "Hide or show the open document's summary and findings (o)", "toggle_overview", ""),
    Command("Help", "The keys of the focused pane, and where the config file is (?)", "app.help", ""),
    Command("Write example config", "Create config.toml listing every setting and key id, commented out", "app.write_config", ""),
]


class WorkbenchCommands(Provider):
    """Palette hits for the workbench's actions (only those that make sense right now)."""

    @property
    def workbench(self) -> "WorkbenchScreen":
        return cast("WorkbenchScreen", self.screen)

    def _available(self) -> Iterator[tuple[str, str, Callable[[], object]]]:
        screen = self.workbench
        app = cast("WorkbenchApp", self.app)
        for command in COMMANDS:
            if command.needs == "job" and app.job is None:
                continue
            if command.needs == "document" and screen.current is None:
                continue
            if command.needs == "novel" and not is_manuscript(screen.current):
                continue
            # Scheduled, as the palette schedules it: the action runs once the palette is gone.
            yield command.name, command.help, partial(screen.call_later, screen.run_action, command.action)

    def _documents(self) -> Iterator[tuple[str, str, Callable[[], object]]]:
        """"Open <path>" for every document of the folder."""
        screen = self.workbench
        for path in screen.documents:
            label = screen.session.label(path)
            yield f"Open {label}", f"Open {label} in the workbench", partial(screen.open_path, path)

    async def discover(self) -> Hits:
        for name, help_text, callback in self._available():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in [*self._available(), *self._documents()]:
            if (score := matcher.match(name)) > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
