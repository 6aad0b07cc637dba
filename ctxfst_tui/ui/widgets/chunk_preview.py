"""The chunk-boundary preview: budget controls, a size sparkline and the chunk map.

The pane only collects intent: when the unit, size or overlap changes it waits for the
user to stop typing (debounce) and posts ``RechunkRequested``; the screen runs the chunker
in a worker and hands the spans back with ``show_spans``. Typing never waits on chunking.
"""
from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, Label, Select, Sparkline, Static

from ...core.chunk_spans import ChunkSpan, size_summary
from .chunk_map import ChunkMap

DEBOUNCE_SECONDS = 0.3
DEFAULTS = {"tokens": (256, 32), "chars": (1024, 128)}
SIZE_STEP = {"tokens": 64, "chars": 256}


EMPTY_NOTE = "Select a document in the tree (Enter) to see where its chunks begin and end."


class ChunkPreview(Vertical):
    """Controls on top, sizes as a sparkline, the map of the chunks below."""

    BINDINGS = [
        Binding("c", "convert", "Convert to CtxFST", id="preview.convert"),
        Binding("s", "edit_size", "Edit size", id="preview.edit-size"),
        Binding("escape", "focus_map", "Back to chunks", show=False, id="preview.focus-map"),
        Binding("plus,equals_sign", "change_size(1)", "Size +", id="preview.size-up"),
        Binding("minus", "change_size(-1)", "Size −", id="preview.size-down"),
    ]

    class RechunkRequested(Message):
        """Chunk the open document again with this budget."""

        def __init__(self, unit: str, size: int, overlap: int) -> None:
            super().__init__()
            self.unit, self.size, self.overlap = unit, size, overlap

    class ConvertRequested(Message):
        """Write the open document as CtxFST with the boundaries shown."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._debounce: Timer | None = None
        self._quiet = False  # set while the screen fills the controls, so that fires no request
        self.border_title = "Chunks"

    def compose(self) -> ComposeResult:
        with Horizontal(id="preview-controls"):
            yield Label("Unit", classes="control-label")
            yield Select([("tokens", "tokens"), ("chars", "chars")], value="tokens", allow_blank=False, id="preview-unit", compact=True)
            yield Label("Size", classes="control-label")
            yield Input(str(DEFAULTS["tokens"][0]), type="integer", id="preview-size", restrict=r"[0-9]*", max_length=6, compact=True)
            yield Label("Overlap", classes="control-label")
            yield Input(str(DEFAULTS["tokens"][1]), type="integer", id="preview-overlap", restrict=r"[0-9]*", max_length=6, compact=True)
            yield Static("", id="preview-stats")
        yield Sparkline([], id="preview-sparkline")
        yield Static(EMPTY_NOTE, id="preview-message")
        yield ChunkMap(id="chunk-map")

    def on_mount(self) -> None:
        self.add_class("-message")  # nothing to draw until a document is opened

    # ------------------------------------------------------------ what the screen hands down
    @property
    def budget(self) -> tuple[str, int, int]:
        """(unit, size, overlap) as entered; empty fields fall back to the unit's defaults."""
        unit = str(self.query_one("#preview-unit", Select).value)
        d_size, d_overlap = DEFAULTS.get(unit, DEFAULTS["tokens"])
        size_input = self.query_one("#preview-size", Input)
        overlap_input = self.query_one("#preview-overlap", Input)
        size = _int(size_input.value or size_input.placeholder, d_size)
        overlap = _int(overlap_input.value or overlap_input.placeholder, d_overlap)
        return unit, size, overlap

    def show_spans(self, text: str, spans: list[ChunkSpan], what: str, keep_selection: bool = False) -> None:
        """Draw ``spans`` over ``text``; ``what`` says where they come from (tags or chunker)."""
        self.remove_class("-message")
        self.query_one(ChunkMap).show(text, spans, keep_selection=keep_selection)
        self.query_one(Sparkline).data = [s.tokens for s in spans] or [0]
        s = size_summary(spans)
        stats = f"{s['count']} chunks · {s['min']}–{s['median']}–{s['max']} tok"
        if s["small"]:
            stats += f" · [b $warning]⚠ {s['small']} under 100[/]"
        if s["large"]:
            stats += f" · [b $warning]⚠ {s['large']} over 1,500[/]"
        self.query_one("#preview-stats", Static).update(stats)
        self.border_subtitle = what

    def show_message(self, text: str) -> None:
        """No chunks to draw (nothing open, or a document that cannot be chunked): say why, in full."""
        self.add_class("-message")
        self.query_one(ChunkMap).show("", [])
        self.query_one(Sparkline).data = []
        self.query_one("#preview-stats", Static).update("")
        self.query_one("#preview-message", Static).update(text)
        self.border_subtitle = ""

    # ------------------------------------------------------------ intents
    @on(Input.Changed, "#preview-size, #preview-overlap")
    @on(Select.Changed, "#preview-unit")
    def _budget_changed(self, event: Input.Changed | Select.Changed) -> None:
        event.stop()
        if isinstance(event, Select.Changed) and not self._quiet:
            unit = str(event.value)
            size, overlap = DEFAULTS.get(unit, DEFAULTS["tokens"])
            self._quiet = True
            self.query_one("#preview-size", Input).value = str(size)
            self.query_one("#preview-overlap", Input).value = str(overlap)
            self._quiet = False
        if self._quiet:
            return
        if self._debounce is not None:
            self._debounce.stop()
        self._debounce = self.set_timer(DEBOUNCE_SECONDS, self._request)

    def _request(self) -> None:
        self._debounce = None
        unit, size, overlap = self.budget
        self.post_message(self.RechunkRequested(unit, size, overlap))

    def request_now(self) -> None:
        """Ask for chunks with the current budget at once (e.g. when a document opens)."""
        self._request()

    def action_change_size(self, direction: int) -> None:
        unit, size, _ = self.budget
        step = SIZE_STEP.get(unit, 64)
        new = max(32, size + direction * step)
        self.query_one("#preview-size", Input).value = str(new)

    def action_edit_size(self) -> None:
        size = self.query_one("#preview-size", Input)
        if size.value:  # start empty so typing replaces the number; the old one stays as placeholder
            self._quiet = True
            size.placeholder, size.value = size.value, ""
            self._quiet = False
        size.focus()

    @on(Input.Submitted)
    def action_focus_map(self) -> None:
        """Enter or Escape in a budget field hands the keys back to the chunk map (n / p)."""
        self.query_one(ChunkMap).focus()

    def action_convert(self) -> None:
        self.post_message(self.ConvertRequested())


def _int(text: str, default: int) -> int:
    try:
        return int(text)
    except (TypeError, ValueError):
        return default
