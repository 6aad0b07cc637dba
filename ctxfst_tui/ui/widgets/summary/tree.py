"""The summary-tree pane: a novel as book → parts → chapters → scenes, each with its word count
and a status mark, and beside the tree the highlighted node's summary and its source text.

Marks (the core's, as in ``summarize --outline``): ``✓`` done, ``·`` pending, ``…`` running,
``✗`` failed, ``~`` stale (the source changed since the summary was made), ``-`` skipped
(front matter, never sent to the model), ``¶`` extractive (the model's answers were rejected, so
the summary is the node's own sentences); ``⚑`` after a title: the node carries flags.

The pane only renders what the screen hands it (:class:`~..jobs.NovelView` and
:class:`~..jobs.SummaryNodeView` copies, job progress) and posts intents: ``s`` summarizes the
highlighted node's subtree, ``b`` the whole book (:class:`SummaryPane.SummarizeRequested`).
Its layout follows its own width: tree | summary | source when wide, the summary over the
source beside the tree in between, everything stacked when narrow (80 columns).
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.events import Resize
from textual.message import Message
from textual.widgets import Static, TextArea, Tree
from textual.widgets.tree import TreeNode

from ctxfst_tui.core.summary.tree import EXTRACTIVE_MARK, STATUS_MARKS, STATUSES, status_mark
from ctxfst_tui.core.text.plural import count
from ctxfst_tui.services.jobs import Job, JobProgress, NovelView, SummaryNodeView, format_duration
from ctxfst_tui.ui.widgets.jobs.status import phase_parts, position

NULL_STYLE = Style()
FLAG_MARK = "⚑"
WIDE_FROM = 150  # pane columns: tree | summary | source
MEDIUM_FROM = 90  # tree | (summary over source); below: all stacked
SOURCE_MAX_CHARS = 60_000  # a book's or part's source is shown up to here (a whole novel would stall the view)
EMPTY = "Select a novel (a .txt or .md manuscript) in the document tree to see its summary tree."


def reflowed(text: str) -> str:
    """Hard-wrapped prose (a Project Gutenberg file: lines of ~70 characters) as one line per
    paragraph, so the view wraps it to its own width; other text as it is."""
    lines = [line for line in text.split("\n") if line.strip()]
    if len(lines) < 4:
        return text
    wrapped = sum(1 for line in lines if 45 <= len(line.rstrip()) <= 80)
    if wrapped < 0.6 * len(lines) or sum(1 for line in lines if len(line) > 100) > 0.05 * len(lines):
        return text
    paragraphs = re.split(r"\n[ \t]*\n", text)
    return "\n\n".join(" ".join(part.strip() for part in para.split("\n") if part.strip()) for para in paragraphs)


class SummaryTree(Tree[str]):
    """The nodes of one novel (data: the node id), drawn from the views the pane hands it."""

    COMPONENT_CLASSES = {f"summary-tree--{status}" for status in STATUSES} | {
        "summary-tree--extractive",
        "summary-tree--words",
        "summary-tree--flag",
    }
    DEFAULT_CSS = """
    SummaryTree > .summary-tree--extractive { color: $text-secondary; text-style: bold; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("Summary tree", data=None, id=id)
        self.guide_depth = 2
        self.views: dict[str, SummaryNodeView] = {}
        self.parents: dict[str, str] = {}
        self.counts: Counter = Counter()  # nodes by status (front matter left out), kept as nodes change
        self._tree_nodes_by_id: dict[str, TreeNode[str]] = {}

    # ------------------------------------------------------------ what the pane hands down
    @property
    def extractive_count(self) -> int:
        """Nodes shown with an extractive summary (``¶``)."""
        return sum(1 for v in self.views.values() if v.extractive and v.status == "done" and not v.front_matter)

    @property
    def current(self) -> SummaryNodeView | None:
        node = self.cursor_node
        return self.views.get(node.data) if node is not None and node.data is not None else None

    def show_tree(self, view: NovelView, keep: bool = False) -> None:
        """Build the tree; ``keep``: the same novel again (expanded nodes and the cursor stay)."""
        expanded = {i for i, n in self._tree_nodes_by_id.items() if n.is_expanded} if keep else None
        cursor = self.current.id if keep and self.current is not None else None
        self.clear()
        self.views = {v.id: v for v in view.nodes}
        self.counts = Counter(v.status for v in view.nodes if not v.front_matter)
        self.parents = {c: v.id for v in view.nodes for c in v.children}
        root = view.root
        self.root.data = root.id
        self.root.set_label(root.title)
        self._tree_nodes_by_id = {root.id: self.root}

        def add(parent: TreeNode[str], v: SummaryNodeView) -> None:
            for child_id in v.children:
                child = self.views[child_id]
                if child.children:
                    opened = child_id in expanded if expanded is not None else child.kind == "part"
                    node = parent.add(child.title, data=child_id, expand=opened)
                    add(node, child)
                else:
                    node = parent.add_leaf(child.title, data=child_id)
                self._tree_nodes_by_id[child_id] = node

        add(self.root, root)
        self.root.expand()
        self.get_node_at_line(0)  # lay the lines out now, so nodes know their line
        self.select(cursor or root.id)

    def update_view(self, view: SummaryNodeView) -> bool:
        """A node changed (started, finished): redraw its line. False when it is not in the tree."""
        node = self._tree_nodes_by_id.get(view.id)
        if node is None:
            return False
        old = self.views.get(view.id)
        if old is not None and not old.front_matter:
            self.counts[old.status] -= 1
        if not view.front_matter:
            self.counts[view.status] += 1
        self.views[view.id] = view
        node.refresh()
        return True

    def select(self, node_id: str) -> None:
        """Put the cursor on ``node_id``, opening its ancestors."""
        node = self._tree_nodes_by_id.get(node_id)
        if node is None:
            return
        parent = node.parent
        while parent is not None:
            if not parent.is_expanded:
                parent.expand()
            parent = parent.parent
        self.get_node_at_line(0)
        self.move_cursor(node)

    def breadcrumb(self, node_id: str) -> str:
        """``Chapter Two › Scene 1``: the node's titles from below the book."""
        parts = []
        current: str | None = node_id
        while current is not None and current in self.parents:
            parts.append(self.views[current].title)
            current = self.parents.get(current)
        return " › ".join(reversed(parts)) if parts else self.views[node_id].title

    def expand_or_collapse_all(self) -> None:
        branches = [n for n in self._tree_nodes_by_id.values() if n.children and n is not self.root]
        if any(not n.is_expanded for n in branches):
            self.root.expand_all()
        else:
            for n in branches:
                n.collapse()

    # ------------------------------------------------------------ rendering
    def _style(self, component: str) -> Style:
        return self.get_component_rich_style(f"summary-tree--{component}", partial=True, default=NULL_STYLE)

    def render_label(self, node: TreeNode[str], base_style: Style, style: Style) -> Text:
        view = self.views.get(node.data) if node.data is not None else None
        if view is None:
            return super().render_label(node, base_style, style)
        prefix = (self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE) if node.allow_expand else ""
        status = view.status if view.status in STATUS_MARKS else "pending"
        title = Text(view.title)
        if view.kind in ("book", "part", "chapter"):
            title.stylize("bold")
        title.stylize(style)
        flag = " " + FLAG_MARK if view.flags and status in ("done", "failed", "stale") else ""
        words = f"  {view.words:,} w"
        # a long title is cut (…) so that the word count stays in sight and nothing scrolls sideways
        room = self.scrollable_content_region.width - self._indent(node)
        room -= len(prefix) + 2 + len(flag) + len(words)
        if self.scrollable_content_region.width and title.cell_len > room:
            title.truncate(max(2, room), overflow="ellipsis")
        extractive = view.extractive and status == "done"
        parts: list = [(prefix, base_style),
                       (status_mark(status, extractive) + " ", self._style("extractive" if extractive else status)), title]
        if flag:
            parts.append((flag, self._style("flag")))
        parts.append((words, self._style("words")))
        return Text.assemble(*parts)

    def _indent(self, node: TreeNode[str]) -> int:
        """Cells of guides before a node's label (the root is shown)."""
        depth = 0
        parent = node.parent
        while parent is not None:
            depth += 1
            parent = parent.parent
        return depth * self.guide_depth


class SummaryPane(Vertical):
    """A status line; the tree; the highlighted node's summary and source."""

    @dataclass(eq=False)
    class SummarizeRequested(Message):
        """Summarize the subtree of ``node_id`` (None: the whole book) of the novel shown;
        ``label`` says which as the user sees it ("Chapter Two › Scene 1")."""

        node_id: str | None
        label: str

    BINDINGS = [
        Binding("s", "summarize_node", "Summarize node", id="summary.summarize-node",
                tooltip="Summarize the highlighted node and everything under it (model job; escape cancels)"),
        Binding("b", "summarize_book", "Summarize book", id="summary.summarize-book",
                tooltip="Summarize the whole book: every scene, chapter, part, then the book (model job)"),
        Binding("e", "expand_all", "Expand all", id="summary.expand-all",
                tooltip="Open every chapter of the tree (again: close them)"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="-empty")
        self.view: NovelView | None = None
        self.label = ""  # the novel's file as shown
        self.job: Job | None = None  # a summary job running on the novel shown
        self.progress: JobProgress | None = None
        self.cancelling = False
        self.status_text = ""  # the status line as plain text (for tests and screen readers)
        self.summary_text = ""  # the summary box as plain text
        self._source_span: tuple[int, int] | None = None
        self._layout = ""

    def compose(self) -> ComposeResult:
        yield Static(EMPTY, id="summary-status")
        with Horizontal(id="summary-body"):
            yield SummaryTree(id="summary-tree")
            with Horizontal(id="summary-detail"):
                with VerticalScroll(id="summary-box"):
                    yield Static("", id="summary-text")
                yield TextArea("", read_only=True, soft_wrap=True, show_line_numbers=False,
                               highlight_cursor_line=False, tab_behavior="focus", id="summary-source")

    def on_mount(self) -> None:
        self.tree.border_title = "Summary tree"
        self.query_one("#summary-box").border_title = "Summary"
        self.source.border_title = "Source"
        self.status_text = EMPTY

    @property
    def tree(self) -> SummaryTree:
        return self.query_one(SummaryTree)

    @property
    def source(self) -> TextArea:
        return self.query_one("#summary-source", TextArea)

    @property
    def current(self) -> SummaryNodeView | None:
        return self.tree.current if self.view is not None else None

    @property
    def path(self):
        return self.view.path if self.view is not None else None

    # ------------------------------------------------------------ layout by width
    @on(Resize)
    def _resized(self, event: Resize) -> None:
        width = event.size.width
        layout = "-wide" if width >= WIDE_FROM else "-medium" if width >= MEDIUM_FROM else "-narrow"
        if layout != self._layout:
            self.remove_class("-wide", "-medium", "-narrow")
            self.add_class(layout)
            self._layout = layout
        if self.view is not None:
            self.call_after_refresh(self._render_status)  # (its line breaks follow the width)

    # ------------------------------------------------------------ what the screen hands down
    def show_message(self, text: str, error: bool = False) -> None:
        """No tree: the empty state, loading, or a one-line error."""
        self.view = None
        self._source_span = None
        self.job, self.progress, self.cancelling = None, None, False
        self.add_class("-empty")
        self.set_class(error, "-error")
        self.status_text = text
        self.query_one("#summary-status", Static).update(Content(text))

    def show_novel(self, view: NovelView, label: str, keep: bool = False) -> None:
        """Show the tree of ``view`` (``keep``: the same novel again: expanded nodes and cursor stay)."""
        same = keep and self.view is not None and self.view.path == view.path
        if self.job is not None and self.job.path != view.path:
            self.job, self.progress, self.cancelling = None, None, False  # that job works on another novel
        self.view = view
        self.label = label
        self.remove_class("-empty", "-error")
        if not same:
            self._source_span = None
        self.tree.show_tree(view, keep=same)
        if same and self._source_span is not None:
            self._source_span = None  # the text may have changed (reloaded)
        self._describe()
        self._render_status()

    def update_node(self, view: SummaryNodeView) -> None:
        if self.view is None or not self.tree.update_view(view):
            return
        current = self.current
        if current is not None and current.id == view.id:
            self._describe()
        self._render_status()

    def job_started(self, job: Job) -> None:
        self.job, self.progress, self.cancelling = job, None, False
        self._render_status()

    def show_progress(self, progress: JobProgress) -> None:
        if progress.job is not self.job:
            return
        self.progress = progress
        self._render_status()

    def show_cancelling(self) -> None:
        self.cancelling = True
        self._render_status()

    def job_ended(self) -> None:
        self.job, self.progress, self.cancelling = None, None, False
        self._render_status()

    # ------------------------------------------------------------ rendering
    def _counts(self) -> Counter:
        return self.tree.counts

    def _render_status(self) -> None:
        view = self.view
        if view is None:
            return
        parts: list[Content] = []
        job, p = self.job, self.progress
        if job is not None:
            parts.append(Content.styled(f"Summarizing {job.scope or 'the book'}", "bold"))
            parts += phase_parts(job, p, self.cancelling)
            if p is not None and p.total and p.phase == "running" and not self.cancelling:
                # what matters most first: two lines at 80 columns
                current = position(p)
                parts[0] = Content.styled(f"Summarizing: node {current} of {p.total}", "bold")
                parts.append(Content(f"ETA {format_duration(p.eta)}" if p.eta is not None else "ETA …"))
                if p.chunk_id in self.tree.views and p.done < p.total:
                    parts.append(Content(self.tree.breadcrumb(p.chunk_id)))
            if not self.cancelling:
                parts.append(Content.styled("esc cancels", "$text-muted"))
            line = Content(" · ").join(parts)
        else:
            counts = self._counts()
            root = view.root
            scenes = sum(1 for v in view.nodes if v.kind == "scene" and not v.front_matter)
            chapters = sum(1 for v in view.nodes if v.kind == "chapter")
            head = Content.assemble((root.title, "bold"), f" — {root.words:,} words, {count(chapters, 'chapter', grouped=True)}, "
                                                          f"{count(scenes, 'scene', grouped=True)}")
            tally = [Content.styled(f"{STATUS_MARKS[s]} {counts[s]} {s}", f"$text-{tone}")
                     for s, tone in (("done", "success"), ("running", "accent"), ("stale", "warning"),
                                     ("failed", "error"), ("pending", "muted")) if counts.get(s)]
            extractive = self.tree.extractive_count
            if extractive:  # (among the done ones)
                tally.insert(1, Content.styled(f"{EXTRACTIVE_MARK} {extractive} extractive", "$text-secondary"))
            line = self._fit_line([head, *tally], ("   ", "  "))
        self.status_text = line.plain.replace("\n", " ")
        self.query_one("#summary-status", Static).update(line)
        counts = self._counts()
        total = sum(counts.values())
        self.tree.border_subtitle = f"{counts['done']} of {total} done" if total else ""

    def _fit_line(self, pieces: list[Content], gaps: tuple[str, str]) -> Content:
        """The pieces on as few lines as the status line's width allows, a line break only between
        two pieces (so a count such as ``✗ 1 failed`` is never broken); ``gaps``: after the first
        piece, between the others."""
        width = self.query_one("#summary-status", Static).content_region.width
        lines: list[list] = [[pieces[0]]]
        used = pieces[0].cell_length
        for i, piece in enumerate(pieces[1:]):
            gap = gaps[0] if i == 0 else gaps[1]
            if width and used + len(gap) + piece.cell_length > width:
                lines.append([piece])
                used = piece.cell_length
            else:
                lines[-1] += [Content(gap), piece]
                used += len(gap) + piece.cell_length
        return Content("\n").join([Content.assemble(*line) for line in lines])

    def _describe(self) -> None:
        """The summary box and the source view for the highlighted node."""
        view, node = self.view, self.current
        box = self.query_one("#summary-box", VerticalScroll)
        text = self.query_one("#summary-text", Static)
        if view is None or node is None:
            text.update("")
            self.summary_text = ""
            return
        box.border_title = f"Summary — {node.title}"  # the breadcrumb is on the source view
        box.border_subtitle = f"{node.status} · {node.id}"
        lines: list[Content] = []
        size = view.scope_sizes.get(node.id, 0)
        if node.front_matter:
            lines.append(Content.styled("Front matter (title page, contents): never sent to the model.", "$text-muted"))
        elif node.status == "running":
            lines.append(Content.styled(f"{STATUS_MARKS['running']} Summarizing this {node.kind} now…", "$text-accent"))
        elif node.status == "pending" or (node.status != "stale" and not node.summary and node.status != "failed"):
            lines.append(Content.styled("Not summarized yet.", "bold"))
            if node.kind == "book":
                hint = f"s or b summarizes the whole book ({count(size, 'node', grouped=True)})."
            elif size <= 1:
                hint = f"s summarizes this {node.kind}; b the whole book."
            else:
                hint = f"s summarizes this {node.kind} and what is under it ({count(size, 'node', grouped=True)}); b the whole book."
            lines.append(Content.styled(hint, "$text-muted"))
        elif node.status == "failed":
            lines.append(Content.styled(f"{STATUS_MARKS['failed']} Failed: the model's answers were rejected.", "$text-error bold"))
        elif node.status == "done" and node.extractive:
            lines.append(Content.styled(f"{EXTRACTIVE_MARK} Extractive: the model's answers were rejected; these are "
                                        f"the {node.kind}'s own sentences.", "$text-secondary bold"))
        elif node.status == "stale":
            lines.append(Content.styled(f"{STATUS_MARKS['stale']} Stale: the source changed since this summary was made "
                                        "(s makes it again).", "$text-warning bold"))
        if node.summary and node.status in ("done", "stale", "running"):
            style = "$text-muted" if node.status == "stale" else ""
            if lines:
                lines.append(Content(""))
            lines.append(Content.styled(node.summary, style) if style else Content(node.summary))
        if node.flags:
            lines.append(Content(""))
            lines.extend(Content.styled(f"{FLAG_MARK} {flag}", "$text-warning") for flag in node.flags)
        if node.rejected and (node.status == "failed" or node.extractive):
            lines.append(Content(""))
            lines.append(Content.styled("Rejected answers:", "$text-muted"))
            lines.extend(Content.styled(f"  {r}", "$text-muted") for r in node.rejected)
        content = Content("\n").join(lines)
        self.summary_text = content.plain
        text.update(content)
        self._show_source(view, node)

    def _show_source(self, view: NovelView, node: SummaryNodeView) -> None:
        area = self.source
        start, end = node.span
        area.border_title = f"Source — {self.tree.breadcrumb(node.id)}"
        shown = min(end, start + SOURCE_MAX_CHARS)
        note = f"{node.words:,} words"
        if shown < end:
            note += f" · first {shown - start:,} of {end - start:,} characters"
        area.border_subtitle = note
        if self._source_span == (start, shown):
            return
        self._source_span = (start, shown)
        area.load_text(reflowed(view.text[start:shown]))
        area.scroll_home(animate=False, immediate=True)

    # ------------------------------------------------------------ intents
    @on(Tree.NodeHighlighted, "#summary-tree")
    def _highlighted(self, event: Tree.NodeHighlighted) -> None:
        event.stop()
        self._describe()

    @on(Tree.NodeSelected, "#summary-tree")
    def _selected(self, event: Tree.NodeSelected) -> None:
        event.stop()

    def _request(self, node: SummaryNodeView | None) -> None:
        if self.view is None:
            self.notify("Select a novel (.txt or .md manuscript) first.", severity="warning", timeout=3)
            return
        if node is None:
            self.post_message(self.SummarizeRequested(None, "the book"))
            return
        if node.front_matter:
            self.notify("Front matter is never summarized: pick a chapter or a scene.", severity="warning", timeout=3)
            return
        label = "the book" if node.kind == "book" else self.tree.breadcrumb(node.id)
        self.post_message(self.SummarizeRequested(None if node.kind == "book" else node.id, label))

    def action_summarize_node(self) -> None:
        node = self.current
        if self.view is not None and node is None:
            self.notify("Highlight a node of the tree first.", severity="warning", timeout=3)
            return
        self._request(node)

    def action_summarize_book(self) -> None:
        self._request(None)

    def action_expand_all(self) -> None:
        if self.view is not None:
            self.tree.expand_or_collapse_all()
