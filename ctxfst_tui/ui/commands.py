"""The command palette (ctrl+p) entries of the workbench: every model job and the editing actions.

Each entry runs an App action, so a palette command and its key do exactly the same thing.
Theme, Keys, Quit and Screenshot come from Textual's own system commands.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterator

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from .app import WorkbenchApp

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
]


class WorkbenchCommands(Provider):
    """Palette hits for the workbench's actions (only those that make sense right now)."""

    @property
    def workbench(self) -> "WorkbenchApp":
        return self.app  # type: ignore[return-value]

    def _available(self) -> Iterator[tuple[str, str, Callable[[], object]]]:
        app = self.workbench
        from .screens.workbench import WorkbenchScreen

        screen = self.screen if isinstance(self.screen, WorkbenchScreen) else None
        for name, help_text, action, needs in COMMANDS:
            if needs == "job" and app.job is None:
                continue
            if needs == "document" and (screen is None or screen.current is None):
                continue
            if needs == "novel" and (screen is None or not screen.is_manuscript(screen.current)):
                continue
            yield name, help_text, getattr(app, f"action_{action}")

    async def discover(self) -> Hits:
        for name, help_text, callback in self._available():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._available():
            if (score := matcher.match(name)) > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
