"""The help screen: the keys of the focused pane first, then of its containers, the screen and the app.

Built from the screen's own ``active_bindings`` (the bindings a key press would really reach), so
it shows keys as remapped by the config's ``[keys]``, leaves out a binding that a nearer one
shadows or that ``check_action`` hides, and dims one that is disabled. The bindings are taken
when the screen is created, from the screen underneath: once the help screen is on top, the
app's ``check_action`` would answer for it instead.

Also here, because it is about the same bindings: :func:`binding_catalogue`, every binding id
the workbench declares, for the default config file and for checking the user's ``[keys]``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from rich.table import Table
from textual.app import App, ComposeResult, ScreenStackError
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.widgets import Static

from ...config import config_path

STYLES = Path(__file__).resolve().parents[1] / "styles"


@dataclass(frozen=True)
class KeyRow:
    keys: str  # as displayed, every key of the binding: "u, ^z"
    description: str
    binding_id: str | None  # None: not remappable
    enabled: bool


@dataclass(frozen=True)
class KeyGroup:
    title: str
    node: DOMNode  # where the bindings are declared
    rows: tuple[KeyRow, ...]


def _title(node: DOMNode, focused: DOMNode | None) -> str:
    name = type(node).__name__
    if isinstance(node, App):
        return f"Everywhere · {name}"
    if isinstance(node, Screen):
        return f"This screen · {name}"
    label = str(getattr(node, "border_title", "") or "")
    label = f"{label} · {name}" if label else name
    return f"{label} (focused)" if node is focused else label


MOVING_AROUND = "Moving around (cursor and scrolling, not remappable here)"


def key_groups(screen: Screen) -> list[KeyGroup]:
    """The active bindings of ``screen`` by the node declaring them, nearest the focus first;
    the generic ones (no id: Textual's cursor and scroll keys) gathered in a last group."""
    app = screen.app
    focused = screen.focused
    chain: list[DOMNode] = list(focused.ancestors_with_self) if focused is not None else [screen, app]
    rank = {id(node): i for i, node in enumerate(chain)}
    nodes: dict[int, DOMNode] = {}
    rows: dict[int, dict[object, tuple[list[str], KeyRow]]] = {}
    for active in screen.active_bindings.values():
        binding, node = active.binding, active.node
        nodes[id(node)] = node
        same = binding.id or (binding.action, binding.description)  # "u,ctrl+z" arrives as two bindings
        keys, row = rows.setdefault(id(node), {}).setdefault(same, ([], KeyRow(
            "", binding.description or binding.tooltip or binding.action, binding.id, active.enabled)))
        keys.append(app.get_key_display(binding))
    groups = []
    generic: dict[tuple[str, str], KeyRow] = {}  # Textual's own cursor/scroll keys, from every node
    for key, by_id in sorted(rows.items(), key=lambda item: rank.get(item[0], len(chain))):
        merged = [KeyRow(", ".join(dict.fromkeys(keys)), r.description[:1].upper() + r.description[1:], r.binding_id, r.enabled)
                  for keys, r in by_id.values()]
        for r in merged:
            if r.binding_id is None:
                generic.setdefault((r.keys, r.description), r)
        own = tuple(r for r in merged if r.binding_id is not None)
        if own:
            groups.append(KeyGroup(_title(nodes[key], focused), nodes[key], own))
    if generic:  # last: the workbench's own keys come first, moving around is the same everywhere
        groups.append(KeyGroup(MOVING_AROUND, focused or screen, tuple(generic.values())))
    return groups


class KeyTable(Widget):
    """One group's keys as a table (key · what it does · binding id), styled from the theme."""

    COMPONENT_CLASSES = {"key-table--key", "key-table--id", "key-table--disabled"}

    def __init__(self, rows: Iterable[KeyRow], key_width: int = 12, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.rows = tuple(rows)
        self.key_width = key_width  # the same in every group, so the columns line up

    def render(self) -> Table:
        key_style = self.get_component_rich_style("key-table--key")
        id_style = self.get_component_rich_style("key-table--id")
        off_style = self.get_component_rich_style("key-table--disabled")
        table = Table.grid(padding=(0, 2), expand=True)
        table.add_column(width=self.key_width, no_wrap=True, overflow="ellipsis")
        table.add_column(ratio=1)
        table.add_column(max_width=24, no_wrap=True, overflow="ellipsis", justify="right")
        for row in self.rows:
            table.add_row(row.keys, row.description, row.binding_id or "",
                          style=None if row.enabled else off_style)
        for column, style in zip(table.columns, (key_style, None, id_style)):
            column.style = style or ""
        return table


class HelpScreen(ModalScreen[None]):
    """The keys of what has the focus; escape, q, ? or f1 closes."""

    CSS_PATH = STYLES / "help.tcss"
    BINDINGS = [Binding("escape,q,question_mark,f1", "close", "Close", id="help.close")]

    def __init__(self, screen: Screen | None = None, config_file: Path | None = None) -> None:
        """``screen``: whose keys to list (default: the active screen at creation)."""
        super().__init__()
        self.config_file = config_file or config_path()
        self.groups: list[KeyGroup] | None = None
        try:
            self.groups = key_groups(screen or self.app.screen)
        except (RuntimeError, ScreenStackError):  # no app running here: from the screen underneath, in compose
            self.groups = None

    def compose(self) -> ComposeResult:
        if self.groups is None:
            stack = self.app.screen_stack
            below = stack[stack.index(self) - 1] if self in stack and stack.index(self) > 0 else stack[0]
            self.groups = key_groups(below)
        with Vertical(id="help-dialog"):
            yield Static("Keys — the focused pane first; the right column is the id to remap", id="help-title")
            key_width = min(18, max([len(r.keys) for g in self.groups for r in g.rows] + [6]))
            with VerticalScroll(id="help-body"):
                for group in self.groups:
                    yield Static(group.title, classes="help-group-title", markup=False)
                    yield KeyTable(group.rows, key_width, classes="help-group")
                if not self.groups:
                    yield Static("No keys here.", classes="help-group-title")
            yield Static(Content.from_markup(
                "[b]$palette[/b] opens the command palette: every action by name. "
                "Remap a key by its id in [b]$config[/b], under \\[keys], e.g. save = \"ctrl+s,f2\". "
                "[b]escape[/b], [b]q[/b] or [b]?[/b] closes.",
                palette=self.app.COMMAND_PALETTE_BINDING, config=str(self.config_file)), id="help-note")

    def on_mount(self) -> None:
        self.query_one("#help-body").focus()

    def action_close(self) -> None:
        self.dismiss(None)


def binding_catalogue(classes: Iterable[type[DOMNode]] | None = None) -> list[tuple[str, str, str]]:
    """(id, default keys, description) of every binding with an id, sorted by id.

    ``classes`` default: every App, Screen and Widget class of ``ctxfst_tui`` imported so far
    (importing ``ctxfst_tui.ui.app`` imports them all). Each class's own ``BINDINGS`` only, so an
    inherited binding is counted once, where it is declared.
    """
    if classes is None:
        classes = [c for c in _subclasses(DOMNode) if c.__module__.startswith("ctxfst_tui.")]
    found: dict[str, tuple[str, str, str]] = {}
    for cls in classes:
        for item in cls.__dict__.get("BINDINGS", ()):
            binding = item if isinstance(item, Binding) else Binding(*item)
            if binding.id and binding.id not in found:
                found[binding.id] = (binding.id, binding.key, binding.description or binding.tooltip or binding.action)
    return sorted(found.values())


def _subclasses(cls: type) -> list[type]:
    out, todo = [], list(cls.__subclasses__())
    while todo:
        sub = todo.pop()
        out.append(sub)
        todo.extend(sub.__subclasses__())
    return out
