"""The findings pane: one row per finding (severity, line:column, rule, message)."""
from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.binding import Binding
from textual.events import Resize
from textual.message import Message
from textual.widgets import DataTable

from ctxfst_tui.core.format.findings import Finding

ICONS = {"error": "✗", "warning": "▲", "info": "ℹ"}
MIN_MESSAGE_WIDTH = 16


def _where(f: Finding) -> str:
    if not f.line:
        return "file"
    return f"{f.line}:{f.column}" if f.column else str(f.line)


class FindingsPane(DataTable[Text]):
    """Renders the findings the screen hands it; choosing one posts FindingSelected.

    Messages wrap inside the pane (rows grow taller) rather than running off to the right.
    """

    @dataclass(eq=False)
    class FindingSelected(Message):
        """The user chose a finding: show its place in the source (1-based; line 0 = whole file).
        ``focus`` False: only previewing (the cursor moving over the list)."""

        line: int
        column: int
        focus: bool = True

    BINDINGS = [
        Binding("enter", "select_cursor", "Show in source", id="findings.show-in-source"),
    ]

    COMPONENT_CLASSES = {
        "findings-pane--error",
        "findings-pane--warning",
        "findings-pane--info",
        "findings-pane--location",
        "findings-pane--none",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.border_title = "Findings"
        self._findings: list[Finding] = []
        self._shown = False  # nothing to say before the first document arrives
        self._message_width = 0

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._render_rows())
        self._render_rows()

    # ------------------------------------------------------------ what the screen hands down
    @property
    def findings(self) -> list[Finding]:
        return list(self._findings)

    def show_findings(self, findings: list[Finding], keep_cursor: bool = False) -> None:
        self._findings = list(findings)
        self._shown = True
        self._render_rows(self.cursor_row if keep_cursor else 0)
        errors = sum(f.severity == "error" for f in findings)
        warnings = sum(f.severity == "warning" for f in findings)
        self.border_subtitle = f"{errors} ✗  {warnings} ▲" if findings else ""

    # ------------------------------------------------------------ rendering
    def _style(self, component: str):
        return self.get_component_rich_style(f"findings-pane--{component}", partial=True)

    def _column_widths(self) -> tuple[int, int, int]:
        where = max([len("Line:Col"), *(len(_where(f)) for f in self._findings)])
        rule = max([len("Rule"), *(len(f.rule) for f in self._findings)])
        pad = 2 * self.cell_padding
        used = (1 + pad) + (where + pad) + (rule + pad) + pad
        return where, rule, max(self.scrollable_content_region.width - used, MIN_MESSAGE_WIDTH)

    def _render_rows(self, cursor_row: int = 0) -> None:
        where_w, rule_w, message_w = self._column_widths()
        self._message_width = message_w
        self.clear(columns=True)
        self.add_column("", key="severity", width=1)
        self.add_column("Line:Col", key="where", width=where_w)
        self.add_column("Rule", key="rule", width=rule_w)
        self.add_column("Message", key="message", width=message_w)
        if not self._findings:
            if self._shown:
                none = self._style("none")
                self.add_row(Text("✓", none), Text(""), Text(""), Text("No findings: the document is valid.", none), key="none")
            return
        where_style = self._style("location")
        for i, f in enumerate(self._findings):
            style = self._style(f.severity if f.severity in ICONS else "info")
            self.add_row(
                Text(ICONS.get(f.severity, "•"), style),
                Text(_where(f), where_style, justify="right"),
                Text(f.rule, style),
                Text(f.message),
                key=str(i),
                height=None,  # wrap long messages
            )
        self.move_cursor(row=min(cursor_row, len(self._findings) - 1), scroll=True)

    def on_resize(self, event: Resize) -> None:
        if self.is_mounted and self._column_widths()[2] != self._message_width:
            self._render_rows(self.cursor_row)

    # ------------------------------------------------------------ intents
    def _finding_at(self, key: str | None) -> Finding | None:
        if key is None or not key.isdigit():
            return None
        i = int(key)
        return self._findings[i] if i < len(self._findings) else None

    @on(DataTable.RowSelected)
    def _chosen(self, event: DataTable.RowSelected) -> None:
        event.stop()
        finding = self._finding_at(event.row_key.value)
        if finding is not None:
            self.post_message(self.FindingSelected(finding.line, finding.column))

    @on(DataTable.RowHighlighted)
    def _previewed(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        finding = self._finding_at(event.row_key.value)
        if finding is not None and self.has_focus:
            self.post_message(self.FindingSelected(finding.line, finding.column, focus=False))
