"""The diagnosis pane: the workspace's chunk-quality findings, grouped by category, with counts.

A tree: one branch per category (its label counts the findings by severity), the findings
beneath it, worst first. After an edit the cursor stays on its finding, or moves to the
next one when that finding was fixed. ``n``/``p`` step from finding to finding across categories; Enter
posts ``DiagnosisChosen`` (the screen opens the document and shows the place); ``f`` posts
``FixRequested``. Below the tree, the highlighted finding's suggestion and fix.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode

from ctxfst_tui.services.analysis import SEVERITY_RANK, DiagnosisItem

ICONS = {"error": "✗", "warning": "▲", "info": "ℹ"}
# A fixed order (broken structure and links first), so categories do not move about as edits fix things.
CATEGORY_ORDER = (
    "structure", "entity_linking", "dependencies", "entity_duplication", "entity_noise",
    "context_quality", "semantic_similarity", "tag_overlap", "id_naming", "chunk_size",
)
NULL_STYLE = Style()
Data = DiagnosisItem | str | None


def category_title(category: str) -> str:
    return category.replace("_", " ").capitalize()


class DiagnosisTree(Tree[Data]):
    """Categories are branches (data: the category name); findings are leaves (data: the item)."""

    COMPONENT_CLASSES = {
        "diagnosis-tree--error",
        "diagnosis-tree--warning",
        "diagnosis-tree--info",
        "diagnosis-tree--category",
        "diagnosis-tree--location",
        "diagnosis-tree--fixable",
        "diagnosis-tree--none",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("Diagnosis", data=None, id=id)
        self.show_root = False
        self.guide_depth = 2
        self._items: list[DiagnosisItem] = []
        self._collapsed: set[str] = set()
        self.placeholder = "Analysing the workspace…"

    def on_mount(self) -> None:
        self.root.add_leaf(self.placeholder, data=None)

    # ------------------------------------------------------------ what the pane hands down
    @property
    def items(self) -> list[DiagnosisItem]:
        """The findings in the order the tree shows them."""
        return [n.data for n in self.finding_nodes()]

    def finding_nodes(self) -> list[TreeNode[Data]]:
        return [leaf for branch in self.root.children for leaf in branch.children if isinstance(leaf.data, DiagnosisItem)]

    @property
    def current(self) -> DiagnosisItem | None:
        node = self.cursor_node
        return node.data if node is not None and isinstance(node.data, DiagnosisItem) else None

    def show_items(self, items: list[DiagnosisItem]) -> None:
        # Keep the cursor on the same finding or, when it is gone (fixed), on the one after it.
        old = [n.data.key for n in self.finding_nodes()]
        current = self.current.key if self.current is not None else None
        wanted = old[old.index(current):] + old[: old.index(current)][::-1] if current in old else []
        line = max(self.cursor_line, 0)
        for branch in self.root.children:
            if isinstance(branch.data, str) and not branch.is_expanded:
                self._collapsed.add(branch.data)
            elif isinstance(branch.data, str):
                self._collapsed.discard(branch.data)
        self._items = list(items)
        self.clear()
        if not items:
            self.root.add_leaf("No findings: every chunk and entity passes the diagnosis.", data=None)
            return
        groups: dict[str, list[DiagnosisItem]] = {}
        for item in items:
            groups.setdefault(item.category, []).append(item)

        def order(category: str) -> tuple:
            known = CATEGORY_ORDER.index(category) if category in CATEGORY_ORDER else len(CATEGORY_ORDER)
            return (known, category)

        leaves: dict[tuple, TreeNode[Data]] = {}
        for category in sorted(groups, key=order):
            members = sorted(groups[category], key=lambda i: (SEVERITY_RANK.get(i.severity, 3), i.display, i.line))
            branch = self.root.add(category_title(category), data=category, expand=category not in self._collapsed)
            for item in members:
                leaves.setdefault(item.key, branch.add_leaf(item.message, data=item))
        self._nodes_ready()
        target = next((leaves[k] for k in wanted if k in leaves), None)
        if target is not None:
            if target.parent is not None and not target.parent.is_expanded:
                target.parent.expand()
                self._nodes_ready()
            self.move_cursor(target)
        else:
            self.cursor_line = min(line, self.last_line)

    def _nodes_ready(self) -> None:
        """Lay the lines out now, so that nodes know their line before the next refresh."""
        self.get_node_at_line(0)

    # ------------------------------------------------------------ stepping
    def step(self, direction: int) -> DiagnosisItem | None:
        """Move to the next (1) or previous (-1) finding, opening its category if needed."""
        nodes = self.finding_nodes()
        if not nodes:
            return None
        current = self.cursor_node
        if current in nodes:
            i = nodes.index(current) + direction
        else:
            after = [k for k, n in enumerate(nodes) if self._line_of(n) > self.cursor_line]
            i = (after[0] if after else len(nodes)) if direction > 0 else (after[0] - 1 if after else len(nodes) - 1)
        i = max(0, min(i, len(nodes) - 1))
        node = nodes[i]
        if node.parent is not None and not node.parent.is_expanded:
            node.parent.expand()
        self._nodes_ready()
        self.move_cursor(node)
        return node.data

    def _line_of(self, node: TreeNode[Data]) -> int:
        return node.line if node.line >= 0 else (node.parent.line if node.parent is not None else -1)

    # ------------------------------------------------------------ rendering
    def _style(self, component: str) -> Style:
        return self.get_component_rich_style(f"diagnosis-tree--{component}", partial=True, default=NULL_STYLE)

    def render_label(self, node: TreeNode[Data], base_style: Style, style: Style) -> Text:
        """The row, cut with … to the tree's width (the whole finding is in the detail below)."""
        label = self._label(node, base_style, style)
        width = self.scrollable_content_region.width
        if width:
            depth, parent = 0, node.parent
            while parent is not None:
                depth, parent = depth + 1, parent.parent
            room = max(width - (depth - 1) * self.guide_depth, 1)  # the guides (none for the hidden root)
            if label.cell_len > room:
                label.truncate(room, overflow="ellipsis")
        return label

    def _label(self, node: TreeNode[Data], base_style: Style, style: Style) -> Text:
        data = node.data
        if isinstance(data, str):  # a category
            members = [c.data for c in node.children if isinstance(c.data, DiagnosisItem)]
            counts = Counter(m.severity for m in members)
            prefix = self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE
            title = Text(str(node.label), self._style("category"))
            title.stylize(style)
            parts: list = [(prefix, base_style), title, ("  ", base_style), (f"{len(members)}", base_style)]
            for severity in ("error", "warning", "info"):
                if counts.get(severity):
                    parts.append((f"  {ICONS[severity]} {counts[severity]}", self._style(severity)))
            return Text.assemble(*parts)
        if isinstance(data, DiagnosisItem):
            severity = data.severity if data.severity in ICONS else "info"
            where = f"{data.display}:{data.line}" if data.line else data.display
            message = Text(data.message)
            message.stylize(style)
            parts = [
                (ICONS[severity] + " ", self._style(severity)),
                ("⚒ " if data.fixable else "  ", self._style("fixable")),
                (where, self._style("location")),
                ("  ", base_style),
                (data.rule, self._style(severity)),
                ("  ", base_style),
                message,
            ]
            return Text.assemble(*parts)
        text = Text(str(node.label), self._style("none"))
        return text


class DiagnosisPane(Vertical):
    """The findings tree and, below it, the highlighted finding's suggestion and fix."""

    @dataclass(eq=False)
    class DiagnosisChosen(Message):
        """The user chose a diagnosis finding: open its document and show its place."""

        item: DiagnosisItem

    @dataclass(eq=False)
    class FixRequested(Message):
        """Apply the fix of a diagnosis finding."""

        item: DiagnosisItem

    BINDINGS = [
        Binding("n", "step(1)", "Next finding", id="diagnosis.next"),
        Binding("p", "step(-1)", "Prev finding", id="diagnosis.previous"),
        Binding("f", "fix", "Apply fix", id="diagnosis.fix", tooltip="Apply the finding's fix (u undoes it)"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Diagnosis"

    def compose(self) -> ComposeResult:
        yield DiagnosisTree(id="diagnosis-tree")
        yield Static("", id="diagnosis-detail")

    @property
    def tree(self) -> DiagnosisTree:
        return self.query_one(DiagnosisTree)

    # ------------------------------------------------------------ what the screen hands down
    def show_findings(self, items: list[DiagnosisItem], documents: int) -> None:
        self.tree.show_items(items)
        counts = Counter(i.severity for i in items)
        fixable = sum(i.fixable for i in items)
        summary = f"{len(items)} finding{'s' if len(items) != 1 else ''} in {documents} document{'s' if documents != 1 else ''}"
        summary += "".join(f" · {counts[s]} {ICONS[s]}" for s in ("error", "warning", "info") if counts.get(s))
        if fixable:
            summary += f" · {fixable} fixable"
        self.border_subtitle = summary
        self._describe(self.tree.current)

    @property
    def current(self) -> DiagnosisItem | None:
        return self.tree.current

    # ------------------------------------------------------------ rendering
    def _describe(self, item: DiagnosisItem | None) -> None:
        detail = self.query_one("#diagnosis-detail", Static)
        if item is None:
            detail.update(Content.from_markup("[$text-muted]n / p step through the findings · Enter shows one in its document · f applies a fix[/]"))
            return
        where = f"{item.display}:{item.line}" if item.line else item.display
        parts: list = [Content.assemble((where, "$text-muted"), "  ", (item.message, "bold"))]
        if item.suggestion:
            parts.append(Content.assemble(("Suggestion ", "$text-muted"), item.suggestion))
        if item.fixable:
            what = item.fix_description or ", ".join(f"{k}" for k in item.fix)
            parts.append(Content.assemble(("Fix (f) ", "$text-success bold"), what))
        elif item.fix_withheld:
            parts.append(Content.styled(f"No automatic fix: {item.fix_withheld.rstrip('.')}.", "$text-muted"))
        else:
            parts.append(Content.styled("No automatic fix: edit the document or the entities.", "$text-muted"))
        detail.update(Content("\n").join(parts))

    # ------------------------------------------------------------ intents
    @on(Tree.NodeHighlighted)
    def _highlighted(self, event: Tree.NodeHighlighted) -> None:
        event.stop()
        self._describe(event.node.data if isinstance(event.node.data, DiagnosisItem) else None)

    @on(Tree.NodeSelected)
    def _selected(self, event: Tree.NodeSelected) -> None:
        event.stop()
        if isinstance(event.node.data, DiagnosisItem):
            self.post_message(self.DiagnosisChosen(event.node.data))

    def action_step(self, direction: int) -> None:
        item = self.tree.step(direction)
        if item is None:
            self.notify("No findings to step through.", timeout=2)
            return
        self._describe(item)

    def action_fix(self) -> None:
        item = self.current
        if item is None:
            self.notify("Select a finding first (n / p).", severity="warning", timeout=2)
            return
        if not item.fixable and item.fix_withheld:
            self.notify(f"No automatic fix for {item.rule}: {item.fix_withheld.rstrip('.')}. {item.suggestion}",
                        severity="warning", timeout=6, markup=False)
            return
        if not item.fixable:
            self.notify(f"No automatic fix for {item.rule}. {item.suggestion}", severity="warning", timeout=5)
            return
        self.post_message(self.FixRequested(item))
