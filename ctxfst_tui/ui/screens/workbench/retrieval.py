"""The Retrieval tab's controller: when the workspace's index is built, and what each edit re-indexes.

The index (``<folder>/.ctxfst-index``) is first built when the Retrieval tab is shown, or at
load when the folder already has one: opening a folder in the workbench never writes an index
the user did not ask for. From then on every change of the session (an entity edit, a fix, a
context written by a model job, undo/redo, a document re-read or converted on disk) re-indexes
in the background after a short pause, labelled with the edit's undo description, so the
scoreboard can say what flipped after which edit.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.timer import Timer

from ctxfst_tui.core.retrieval.index import default_uri, index_meta
from ctxfst_tui.services.analysis import DiagnosisItem
from ctxfst_tui.services.retrieval import RetrievalService
from ctxfst_tui.ui.widgets.retrieval.pane import RetrievalPane
from ctxfst_tui.ui.screens.workbench.controller import Controller

if TYPE_CHECKING:
    from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen

REINDEX_DELAY = 0.5  # seconds of quiet after an edit before re-indexing (a burst of edits is one re-index)


def folder_embedder(root: Path) -> Any:
    """The embedder the folder's index was built with, so the view never re-embeds it with another
    model (an index made with ``ctxfst-tui index --embed gguf:FILE`` stays a GGUF index). A new
    index: the bundled MiniLM, or None (full-text and entity signals) when it cannot load."""
    from ctxfst_tui.core.retrieval.bundled_embedder import EmbedderUnavailable
    from ctxfst_tui.core.retrieval.embedders import embedder_for_index

    meta = index_meta(default_uri(root))
    try:
        return embedder_for_index(meta)
    except EmbedderUnavailable:
        if meta is None:
            return None
        raise  # said in the pane; the index is left as it is


class Retrieval(Controller):
    """The workbench's retrieval: one RetrievalService for the folder, fed the session's edits."""

    def __init__(self, screen: "WorkbenchScreen", embedder_factory: Any = None) -> None:
        """``embedder_factory()``: the embedder to index with; default, the folder's own (``folder_embedder``)."""
        super().__init__(screen)
        self.embedder_factory = embedder_factory
        self.service: RetrievalService | None = None
        self._timer: Timer | None = None
        self._labels: list[str] = []
        self._seen = (0, 0)  # lengths of the undo and redo stacks at the last change

    @property
    def active(self) -> bool:
        return self.service is not None

    def pane(self) -> RetrievalPane:
        return self.screen.query_one(RetrievalPane)

    # ------------------------------------------------------------ starting
    def loaded(self) -> None:
        """The workspace is loaded: start at once when the folder already has an index."""
        if not self.active and Path(default_uri(self.screen.root)).is_dir():
            self.start()

    def shown(self) -> None:
        """The Retrieval tab is shown: build the index the first time."""
        if not self.active:
            self.start()

    def start(self) -> None:
        if self.active:
            return
        root = self.screen.root
        factory = self.embedder_factory or (lambda: folder_embedder(root))
        self.service = RetrievalService(root, embedder_factory=factory, translator=self._translate)
        self.pane().use_service(self.service)
        self._seen = self._stacks()
        self.session.listeners.append(self.changed)
        if self.session.ready:
            self.pane().reindex(self.session.snapshots())

    def _translate(self, question: str, target: str, cancel: Any = None) -> str | None:
        """A question in another script than the notes, translated by the workbench's model (the
        one the model jobs use; its answers are cached). Worker threads only."""
        from ctxfst_tui.core.retrieval.translate import translate

        backend = self.screen.workbench.models.backend(cancel=cancel)
        return translate(question, target, backend, cancel=cancel)

    # ------------------------------------------------------------ following the edits
    def _stacks(self) -> tuple[int, int]:
        stack = self.session.undo
        return len(stack.done), len(stack.undone)

    def _label(self) -> str:
        """What the change just made was, from the undo stack: the new record's description, or
        "undo …"/"redo …" of the record that moved; "" for a change without a record (a reload)."""
        stack = self.session.undo
        undo, redo = stack.done, stack.undone
        before, now = self._seen, (len(undo), len(redo))
        self._seen = now
        if now[0] == before[0] - 1 and now[1] == before[1] + 1 and redo:
            return f"undo {redo[-1].description}"
        if now[0] == before[0] + 1 and now[1] == before[1] - 1 and undo:
            return f"redo {undo[-1].description}"
        if now[0] >= before[0] and undo and now != before:
            return undo[-1].description
        return ""

    def changed(self) -> None:
        """A session listener: the workspace changed; re-index once the edits pause."""
        label = self._label()
        if label and label not in self._labels:
            self._labels.append(label)
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.screen.set_timer(REINDEX_DELAY, self._reindex)

    def _reindex(self) -> None:
        self._timer = None
        if not self.session.ready:
            return
        labels, self._labels = self._labels, []
        self.pane().reindex(self.session.snapshots(), ", ".join(labels))

    # ------------------------------------------------------------ intents
    def open_chunk(self, path: Path, chunk_id: str) -> None:
        """Enter on a result: the chunk in the source (focused) and selected in the chunk preview."""
        screen = self.screen
        doc = self.session.document(path)
        chunk = next((c for c in doc.body_chunks if c.id == chunk_id), None) if doc is not None and doc.readable else None
        if doc is None:
            screen.notify(f"{path.name} is no longer in the workspace.", severity="warning", timeout=3)
            return
        item = DiagnosisItem(path, self.session.label(path), "retrieval", "info", "retrieval", chunk_id, "",
                             chunk.line if chunk else 1, 1, (chunk_id,))
        screen.show_item(item)

    def scoreboard_changed(self, changes: list[str]) -> None:
        self.screen.notify("\n".join(changes), title="Scoreboard", timeout=6)
