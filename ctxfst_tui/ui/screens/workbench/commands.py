"""The command palette (ctrl+p) entries of the workbench: every action, and "Open …" for each document.

Each entry runs an App action, so a palette command and its key do exactly the same thing.
Theme, Keys, Quit and Screenshot come from Textual's own system commands.
"""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Callable, Iterator

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from ctxfst_tui.ui.app import WorkbenchApp

# (name, help, App action, when it is offered: "document" needs an open document, "job" a running job,
# "novel" an open document that can be a manuscript: .txt or .md)
COMMANDS: list[tuple[str, str, str, str]] = [
    ("Contextualize document", "Write a retrieval note into the context of each chunk of the open document (model job)",
     "contextualize", "document"),
    ("Extract entities", "Propose entities and chunk links for the open document (model job), review them, then apply",
     "extract_entities", "document"),
    ("Summarize selected node", "Summarize the summary tree's highlighted node and what is under it (model job)",
     "summarize_node", "novel"),
    ("Summarize book", "Summarize the whole novel shown in the Summary tab: scenes, chapters, the book (model job)",
     "summarize_book", "novel"),
    ("Cancel model job", "Stop the running model job (escape)", "cancel_job", "job"),
    ("Model settings", "Backend, model path, context size, threads; bundled model, another GGUF or an endpoint",
     "model_settings", ""),
    ("Save", "Save every document with unsaved changes", "save", ""),
    ("Undo", "Undo the last edit of the session", "undo", ""),
    ("Redo", "Redo the last undone edit", "redo", ""),
    ("Convert to CtxFST", "Write the open plain document as a CtxFST document with the chunks shown", "convert", "document"),
    ("Re-chunk", "The chunk preview with its size field focused: type a budget, the document re-chunks", "rechunk", "document"),
    ("Validate folder", "Check every document of the folder against the CtxFST rules again", "validate", ""),
    ("Diagnose workspace", "Run the quality diagnosis on the workspace as it is in memory; show the report", "diagnose", ""),
    ("Apply fix", "Apply the fix of the finding highlighted in the Diagnosis tab (undoable)", "apply_fix", ""),
    ("Merge entities", "Merge the suggestion highlighted in the Entities tab, after its diff", "merge", ""),
    ("Toggle document tree", "Hide or show the document tree (ctrl+b)", "toggle_tree", ""),
    ("Toggle overview", "Hide or show the open document's summary and findings (o)", "toggle_overview", ""),
    ("Help", "The keys of the focused pane, and where the config file is (?)", "help", ""),
    ("Write example config", "Create config.toml listing every setting and key id, commented out", "write_config", ""),
]


class WorkbenchCommands(Provider):
    """Palette hits for the workbench's actions (only those that make sense right now)."""

    @property
    def workbench(self) -> "WorkbenchApp":
        return self.app  # type: ignore[return-value]

    def _available(self) -> Iterator[tuple[str, str, Callable[[], object]]]:
        app = self.workbench
        from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen

        screen = self.screen if isinstance(self.screen, WorkbenchScreen) else None
        for name, help_text, action, needs in COMMANDS:
            if needs == "job" and app.job is None:
                continue
            if needs == "document" and (screen is None or screen.current is None):
                continue
            if needs == "novel" and (screen is None or not screen.is_manuscript(screen.current)):
                continue
            yield name, help_text, getattr(app, f"action_{action}")

    def _documents(self) -> Iterator[tuple[str, str, Callable[[], object]]]:
        """"Open <path>" for every document of the folder."""
        from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen

        screen = self.screen if isinstance(self.screen, WorkbenchScreen) else None
        if screen is None:
            return
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
