"""The chunk-boundary preview: budget controls, a size sparkline and the chunk map.

The pane only collects intent: when the unit, size or overlap changes it waits for the
user to stop typing (debounce) and posts ``RechunkRequested``; the screen runs the chunker
in a worker and hands the spans back with ``show_spans``. Typing never waits on chunking.

The size and overlap fields take any text and say when it is not a budget the chunker uses
as is (with the allowed range); the chunks keep the last valid budget meanwhile. Enter or
escape leaves a field, and focus is never put back into one behind the user's back (after a
dialog or the palette), so digits typed for the views (1–5) land in a field only on purpose.
Each document keeps its own budget (``use_document``).

Tab moves between panes: the map is the pane's one tab stop. The controls join the focus chain
once one of them is entered (``s``, or a click) and leave it with the focus, so from the size
field tab reaches the overlap and shift+tab the unit, and tab from the map goes on to the next pane.
"""
from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from rich.markup import escape as escape_markup
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input, Label, Select, Sparkline, Static

from ctxfst_tui.core.chunking.spans import ChunkSpan, size_summary
from ctxfst_tui.core.chunking.preview import DEFAULT_BUDGETS, Budget, parse_budget, size_range
from ctxfst_tui.core.text.plural import count
from ctxfst_tui.ui.widgets.chunks.chunk_map import ChunkMap
from ctxfst_tui.ui.widgets.fixed_input import FixedInput

DEBOUNCE_SECONDS = 0.3
DEFAULTS = DEFAULT_BUDGETS
LEAVE_HINT = "Enter or esc: back to the chunks (n / p)"
SIZE_STEP = {"tokens": 64, "chars": 256}
CONTROLS_WIDTH = 52  # cells the top row's labels, unit, size and overlap take, with the stats' gap


EMPTY_NOTE = "Select a document in the tree (Enter) to see where its chunks begin and end."


class PaneControl:
    """A control of the pane's top row: a tab stop only while the controls are in use."""

    def _preview(self) -> ChunkPreview | None:
        return next((a for a in self.ancestors if isinstance(a, ChunkPreview)), None)  # type: ignore[attr-defined]

    def allow_focus(self) -> bool:
        preview = self._preview()
        return super().allow_focus() and (preview is None or preview.controls_open or self.has_focus)  # type: ignore[misc]

    def focus(self, scroll_visible: bool = True):  # noqa: ANN201 - as Widget.focus
        preview = self._preview()
        if preview is not None:
            preview.controls_open = True  # focused on purpose (s, a click, the screen): a tab stop now
        return super().focus(scroll_visible)  # type: ignore[misc]


class BudgetField(PaneControl, FixedInput):
    """A size or overlap field: free text (never filtered), checked by the pane, which sets
    ``-invalid`` (its check spans both fields, so Input's own per-field validation stays off)."""

    def __init__(self, value: str, *, id: str, compact: bool = True) -> None:
        super().__init__(value, id=id, compact=compact, validate_on=[])


class UnitSelect(PaneControl, Select[str]):
    """The unit of the budget: tokens or characters."""


class ChunkPreview(Vertical):
    """Controls on top, sizes as a sparkline, the map of the chunks below."""

    BINDINGS = [
        Binding("c", "convert", "Convert to CtxFST", id="preview.convert"),
        Binding("s", "edit_size", "Edit size", id="preview.edit-size"),
        Binding("escape", "focus_map", "Back to chunks", show=False, id="preview.focus-map"),
        Binding("plus,equals_sign", "change_size(1)", "Size +", id="preview.size-up"),
        Binding("minus", "change_size(-1)", "Size −", id="preview.size-down"),
    ]

    @dataclass(eq=False)
    class RechunkRequested(Message):
        """Chunk the open document again with this budget; ``document``: the key given to
        ``use_document`` when it was asked."""

        unit: str
        size: int
        overlap: int
        document: object = None

    class ConvertRequested(Message):
        """Write the open document as CtxFST with the boundaries shown."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._debounce: Timer | None = None
        self._applied = Budget.default()  # the last valid budget: what the chunks shown use
        self._problems: dict[str, str] = {}  # field -> why its text is not used
        self._note = ""  # a change the pane made to a field, said once (the overlap after a smaller size)
        self._edited = ""  # the id of the field typed in last
        self._budgets: dict[object, Budget] = {}  # each document's own budget, once set
        self._document: object = None  # the key (path) of the document the controls belong to
        self.controls_open = False  # the top row's controls are tab stops (one of them has been entered)
        self._stats = ""  # the chunks' count and sizes (markup), shown beside the controls or below
        self.border_title = "Chunks"

    def compose(self) -> ComposeResult:
        with Horizontal(id="preview-controls"):
            yield Label("Unit", classes="control-label")
            yield UnitSelect([("tokens", "tokens"), ("chars", "chars")], value="tokens", allow_blank=False, id="preview-unit", compact=True)
            yield Label("Size", classes="control-label")
            low, high = size_range()
            size = BudgetField(str(DEFAULTS["tokens"][0]), id="preview-size", compact=True)
            size.tooltip = f"Chunk size, a whole number from {low} to {high}. {LEAVE_HINT}."
            yield size
            yield Label("Overlap", classes="control-label")
            overlap = BudgetField(str(DEFAULTS["tokens"][1]), id="preview-overlap", compact=True)
            overlap.tooltip = f"Overlap, a whole number from 0 to half the size. {LEAVE_HINT}."
            yield overlap
            yield Static("", id="preview-stats")
        yield Static("", id="preview-stats-row")  # the stats on their own line when the row is full
        yield Static("", id="preview-hint")
        yield Sparkline([], id="preview-sparkline")
        yield Static(EMPTY_NOTE, id="preview-message")
        yield ChunkMap(id="chunk-map")

    def on_mount(self) -> None:
        self.add_class("-message")  # nothing to draw until a document is opened
        self.app.screen_change_signal.subscribe(self, self._screen_changed)

    # ------------------------------------------------------------ what the screen hands down
    @property
    def budget(self) -> tuple[str, int, int]:
        """(unit, size, overlap) the chunks use: the last valid entry (an invalid one is not used)."""
        b = self._applied
        return b.unit, b.size, b.overlap

    def use_document(self, key: object) -> Budget | None:
        """The controls now belong to the document ``key``: show its own budget (the defaults until
        one is set for it) and return that budget, or None when none was set (its own tags, if any)."""
        if self._debounce is not None:  # a budget typed for the previous document is kept for it
            self._debounce.stop()
            self._debounce = None
            self._check(post=False)
        self._document = key
        own = self._budgets.get(key)
        self._fill(own or Budget.default())
        return own

    def _fill(self, budget: Budget) -> None:
        """Put ``budget`` in the controls without asking for chunks (nothing was typed)."""
        with self.prevent(Input.Changed, Select.Changed):
            self.query_one("#preview-unit", Select).value = budget.unit
            for field, value in (("#preview-size", budget.size), ("#preview-overlap", budget.overlap)):
                widget = self.query_one(field, Input)
                widget.value, widget.placeholder = str(value), ""
        self._applied = budget
        self._note = ""
        self._show_problems({})

    def show_spans(self, text: str, spans: list[ChunkSpan], what: str, keep_selection: bool = False) -> None:
        """Draw ``spans`` over ``text``; ``what`` says where they come from (tags or chunker)."""
        self.remove_class("-message")
        self.query_one(ChunkMap).show(text, spans, keep_selection=keep_selection)
        self.query_one(Sparkline).data = [s.tokens for s in spans] or [0]
        s = size_summary(spans)
        spread = f"{s['min']} tok" if s["min"] == s["max"] else f"{s['min']}–{s['median']}–{s['max']} tok"
        stats = f"{count(s['count'], 'chunk')} · {spread}"
        if s["small"]:
            stats += f" · [b $warning]⚠ {s['small']} under 100[/]"
        if s["large"]:
            stats += f" · [b $warning]⚠ {s['large']} over 1,500[/]"
        self._show_stats(stats)
        self.border_subtitle = what

    def _show_stats(self, stats: str) -> None:
        self._stats = stats
        self.query_one("#preview-stats", Static).update(stats)
        self.query_one("#preview-stats-row", Static).update(stats)
        self._place_stats()

    def _place_stats(self) -> None:
        """Beside the controls when they fit there (120 columns), else on the line below (80)."""
        plain = Text.from_markup(self._stats).plain if self._stats else ""
        width = self.content_region.width
        self.set_class(bool(plain) and bool(width) and CONTROLS_WIDTH + cell_len(plain) > width, "-stacked")

    def on_resize(self) -> None:
        self._place_stats()

    def show_message(self, text: str) -> None:
        """No chunks to draw (nothing open, or a document that cannot be chunked): say why, in full."""
        self.add_class("-message")
        self.query_one(ChunkMap).show("", [])
        self.query_one(Sparkline).data = []
        self._show_stats("")
        self.query_one("#preview-message", Static).update(text)
        self.border_subtitle = ""

    # ------------------------------------------------------------ intents
    @on(Input.Changed, "#preview-size, #preview-overlap")
    @on(Select.Changed, "#preview-unit")
    def _budget_changed(self, event: Input.Changed | Select.Changed) -> None:
        event.stop()
        self._edited = event.control.id or ""
        if isinstance(event, Select.Changed):  # a new unit starts from its defaults
            default = Budget.default(str(event.value))
            with self.prevent(Input.Changed):
                self.query_one("#preview-size", Input).value = str(default.size)
                self.query_one("#preview-overlap", Input).value = str(default.overlap)
        if self._debounce is not None:
            self._debounce.stop()
        self._debounce = self.set_timer(DEBOUNCE_SECONDS, self._request)

    def _entered(self) -> tuple[str, str, str]:
        """(unit, size text, overlap text) as entered; an empty field stands for its placeholder."""
        unit = str(self.query_one("#preview-unit", Select).value)
        size, overlap = self.query_one("#preview-size", Input), self.query_one("#preview-overlap", Input)
        return unit, size.value or size.placeholder, overlap.value or overlap.placeholder

    def _check(self, post: bool) -> None:
        """Take the entry if it is valid (and, with ``post``, ask for its chunks); else say why."""
        unit, size_text, overlap_text = self._entered()
        self._note = ""
        budget, problems = parse_budget(unit, size_text, overlap_text)
        if set(problems) == {"overlap"} and self._edited == "preview-size" and overlap_text.strip().isdigit():
            # A smaller size left the (untouched) overlap over half of it: lower it where it is seen.
            half = int(size_text.strip()) // 2
            with self.prevent(Input.Changed):
                self.query_one("#preview-overlap", Input).value = str(half)
            self._note = f"Overlap lowered from {overlap_text.strip()} to {half}: at most half the size."
            budget, problems = parse_budget(unit, size_text, str(half))
        self._show_problems(problems)
        if budget is None:
            return  # the chunks keep the last valid budget
        self._applied = budget
        self._budgets[self._document] = budget
        if post:
            self.post_message(self.RechunkRequested(budget.unit, budget.size, budget.overlap, self._document))

    def _show_problems(self, problems: dict[str, str]) -> None:
        self._problems = problems
        for name in ("size", "overlap"):
            self.query_one(f"#preview-{name}", Input).set_class(name in problems, "-invalid")
        self.set_class(bool(problems) or bool(self._note), "-budget-hint")
        self._update_hint()

    def _update_hint(self) -> None:
        """The line under the controls: why an entry is not used, and how to leave a field."""
        editing = isinstance(self.screen.focused, BudgetField) if self.is_attached else False
        self.set_class(editing, "-editing")
        parts = [f"[b $error]✗ {escape_markup(p)}[/]" for p in self._problems.values()]
        if parts:
            b = self._applied
            parts.append(f"The chunks keep {b.size} {b.unit}, overlap {b.overlap}.")
        elif self._note:
            parts.append(self._note)
        elif editing:
            low, high = size_range()
            parts.append(f"Size {low}–{high}, overlap 0 to half the size.")
        if editing:
            parts.append(LEAVE_HINT + ".")
        self.query_one("#preview-hint", Static).update(" ".join(parts))

    def _request(self) -> None:
        self._debounce = None
        self._check(post=True)

    def action_change_size(self, direction: int) -> None:
        unit, size, _ = self.budget
        step = SIZE_STEP.get(unit, 64)
        low, high = size_range()
        new = max(low, min(high, size + direction * step))
        self.query_one("#preview-size", Input).value = str(new)

    def action_edit_size(self) -> None:
        size = self.query_one("#preview-size", Input)
        if size.value:  # start empty so typing replaces the number; the old one stays as placeholder
            with self.prevent(Input.Changed):
                size.placeholder, size.value = size.value, ""
        size.focus()

    @on(Input.Submitted)
    def action_focus_map(self) -> None:
        """Enter or escape in a budget field: the entry is taken at once and the keys go back to
        the chunk map (n / p, and 1–5 switch views again)."""
        if self._debounce is not None:
            self._debounce.stop()
            self._request()
        self._leave_fields()

    def _leave_fields(self) -> None:
        chunk_map = self.query_one(ChunkMap)
        if chunk_map.focusable:
            chunk_map.focus()
        elif isinstance(self.screen.focused, BudgetField):
            self.screen.set_focus(None)

    def _screen_changed(self, screen: object) -> None:
        """Back from a dialog or the palette: never hand the keys to a field again."""
        if screen is self.screen and isinstance(self.screen.focused, BudgetField):
            self._leave_fields()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        if not isinstance(event.widget, PaneControl) and not self._in_controls(event.widget):
            self.controls_open = False
        self._update_hint()

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        self.call_after_refresh(self._blurred)

    def _blurred(self) -> None:
        if not self._in_controls(self.screen.focused):
            self.controls_open = False  # left the controls: tab passes them by again
        self._update_hint()

    def _in_controls(self, widget: object) -> bool:
        return isinstance(widget, Widget) and any(isinstance(a, PaneControl) for a in widget.ancestors_with_self)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        """A click on a control enters it (it is not a tab stop until then, so the screen did not)."""
        widget = event.widget
        control = next((a for a in widget.ancestors_with_self if isinstance(a, PaneControl)), None) if widget else None
        if control is not None and not control.has_focus:
            control.focus()

    def action_convert(self) -> None:
        self.post_message(self.ConvertRequested())
