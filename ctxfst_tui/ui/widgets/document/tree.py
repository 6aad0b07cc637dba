"""The document tree: the workspace's documents under their folders, each marked with its status."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.style import Style
from rich.text import Text
from textual import on
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from ctxfst_tui.services.report import ERRORS, VALID, WARNINGS, DocumentStatus

NULL_STYLE = Style()
GLYPHS = {VALID: "✓", WARNINGS: "▲", ERRORS: "✗", None: "·"}


class DocumentTree(Tree[Path | None]):
    """Folders are branches, documents are leaves whose data is their Path."""

    @dataclass(eq=False)
    class DocumentSelected(Message):
        """The user chose a document in the tree (Enter or click)."""

        path: Path

    BINDINGS = [
        Binding("enter", "select_cursor", "Open", id="tree.open"),
    ]

    COMPONENT_CLASSES = {
        "document-tree--valid",
        "document-tree--warnings",
        "document-tree--errors",
        "document-tree--pending",
        "document-tree--folder",
        "document-tree--opened",
        "document-tree--unsaved",
        "document-tree--deleted",
        "document-tree--related",
    }

    def __init__(self, root: Path, *, id: str | None = None) -> None:
        super().__init__(Text(root.name or str(root)), data=None, id=id)
        self.root_path = root
        self.show_root = False
        self.guide_depth = 3
        self.border_title = "Documents"
        self.border_subtitle = "scanning…"
        self._statuses: dict[Path, DocumentStatus] = {}
        self._doc_nodes: dict[Path, TreeNode[Path | None]] = {}
        self._unsaved: set[Path] = set()
        self._deleted: set[Path] = set()  # gone from disk (kept in the tree while they have unsaved edits)
        self.related: set[Path] = set()  # documents another view points at (◆)
        self.opened: Path | None = None

    # ------------------------------------------------------------ what the screen hands down
    def show_documents(self, root: Path, paths: list[Path], cursor: Path | None = None) -> None:
        """Replace the tree with ``paths`` (files under ``root``), folders first, then files.

        The cursor goes to ``cursor`` (e.g. a file just written), else stays on the document it
        was on, else the first line: a folder listed again never sends it back to the top."""
        was_on = self.cursor_node.data if self.cursor_node is not None else None
        self.clear()
        self._doc_nodes.clear()
        self._deleted &= set(paths)
        base = root if root.is_dir() else root.parent
        layout: dict = {}
        for path in paths:
            try:
                parts = path.relative_to(base).parts
            except ValueError:
                parts = (str(path),)
            level = layout
            for folder in parts[:-1]:
                level = level.setdefault(folder + "/", {})
            level[parts[-1]] = path
        self._add_level(self.root, layout)
        self.root.expand_all()
        count = len(paths)
        self.border_subtitle = f"{count} document{'s' if count != 1 else ''}" if count else "no documents"
        if not count:
            return
        keep = next((p for p in (cursor, was_on) if isinstance(p, Path) and p in self._doc_nodes), None)
        if keep is not None and self.last_line >= 0:  # (last_line lays the new lines out: node.line is set)
            self.move_cursor(self._doc_nodes[keep])
        else:
            self.cursor_line = 0

    def _add_level(self, parent: TreeNode[Path | None], level: dict) -> None:
        folders = sorted(k for k, v in level.items() if isinstance(v, dict))
        files = [k for k, v in level.items() if not isinstance(v, dict)]
        for name in folders:
            self._add_level(parent.add(Text(name), data=None, expand=True), level[name])
        for name in files:
            path = level[name]
            self._doc_nodes[path] = parent.add_leaf(Text(name), data=path)  # Text: names are not markup

    def set_statuses(self, statuses: dict[Path, DocumentStatus]) -> None:
        self._statuses.update(statuses)
        for path in statuses:
            node = self._doc_nodes.get(path)
            if node is not None:
                node.refresh()

    def set_unsaved(self, paths: set[Path]) -> None:
        """Mark the documents edited in memory but not saved (●)."""
        changed = self._unsaved ^ set(paths)
        self._unsaved = set(paths)
        for path in changed:
            node = self._doc_nodes.get(path)
            if node is not None:
                node.refresh()

    def mark_deleted(self, path: Path, deleted: bool = True) -> None:
        """Mark (or unmark) a document whose file another program deleted."""
        if deleted:
            self._deleted.add(path)
        else:
            self._deleted.discard(path)
        node = self._doc_nodes.get(path)
        if node is not None:
            node.refresh()

    def deleted(self, path: Path) -> bool:
        return path in self._deleted

    def unsaved(self, path: Path) -> bool:
        return path in self._unsaved

    def mark_opened(self, path: Path | None) -> None:
        previous, self.opened = self.opened, path
        for p in (previous, path):
            if p is not None and p in self._doc_nodes:
                self._doc_nodes[p].refresh()

    def status(self, path: Path) -> DocumentStatus | None:
        return self._statuses.get(path)

    @property
    def documents(self) -> list[Path]:
        """The document paths in the order the tree shows them."""
        found: list[Path] = []

        def walk(node: TreeNode[Path | None]) -> None:
            for child in node.children:
                if isinstance(child.data, Path):
                    found.append(child.data)
                walk(child)

        walk(self.root)
        return found

    # ------------------------------------------------------------ rendering
    def _style(self, component: str) -> Style:
        # The default covers rendering before the styles are attached (e.g. during compose).
        return self.get_component_rich_style(f"document-tree--{component}", partial=True, default=NULL_STYLE)

    def render_label(self, node: TreeNode[Path | None], base_style: Style, style: Style) -> Text:
        if not isinstance(node.data, Path):
            label = Text(str(node.label))
            label.stylize(self._style("folder"))
            label.stylize(style)
            prefix = self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE
            return Text.assemble((prefix, base_style), label)
        status = self._statuses.get(node.data)
        state = status.state if status else None
        glyph_style = self._style(state or "pending")
        name = Text(str(node.label))
        if node.data == self.opened:
            name.stylize(self._style("opened"))
        if node.data in self._deleted:
            name.stylize(self._style("deleted"))
            name.append(" (deleted)")
        name.stylize(style)
        # ◆ (used by what another view points at) sits in the gap after the glyph: long names are cut at the right
        gap = ("◆", self._style("related")) if node.data in self.related else " "
        depth, parent = 0, node.parent
        while parent is not None and parent is not self.root:
            depth, parent = depth + 1, parent.parent
        room = self.scrollable_content_region.width - self.guide_depth * depth - 2 - (2 if node.data in self._unsaved else 0)
        if room > 4 and name.cell_len > room:  # cut long names with an ellipsis, not at the edge
            name.truncate(room, overflow="ellipsis")
        if node.data in self._unsaved:
            return Text.assemble((GLYPHS[state], glyph_style), gap, name, (" ●", self._style("unsaved")))
        return Text.assemble((GLYPHS[state], glyph_style), gap, name)

    def mark_related(self, paths: set[Path]) -> None:
        """Mark (◆) the documents another view points at, e.g. those using the highlighted entity."""
        paths = set(paths)
        if paths != self.related:
            changed = paths ^ self.related
            self.related = paths
            for p in changed:
                if p in self._doc_nodes:
                    self._doc_nodes[p].refresh()

    # ------------------------------------------------------------ intents
    @on(Tree.NodeSelected)
    def _document_chosen(self, event: Tree.NodeSelected[Path | None]) -> None:
        if isinstance(event.node.data, Path):
            event.stop()
            self.post_message(self.DocumentSelected(event.node.data))
