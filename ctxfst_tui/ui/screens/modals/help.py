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

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from rich.table import Table
from textual.app import App, ComposeResult, ScreenStackError
from textual.binding import ActiveBinding, Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.widgets import Static

from ctxfst_tui.config import config_path

STYLES = Path(__file__).resolve().parents[2] / "styles"


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


# What the help calls each screen and pane: its class name means nothing to a reader.
TITLES = {
    "WorkbenchScreen": "Workbench",
    "DocumentTree": "Documents",
    "FindingsPane": "Findings",
    "SourceView": "Source",
    "ChunkMap": "Chunk list",
    "ChunkPreview": "Chunks",
    "EntityPanel": "Entities",
    "EntityTable": "Entities table",
    "ClusterList": "Suggested merges",
    "DiagnosisPane": "Diagnosis",
    "DiagnosisTree": "Diagnosis tree",
    "SummaryPane": "Summary",
    "SummaryTree": "Summary tree",
}

# Bindings listed (dimmed, "when" added) even while ``check_action`` hides them: keys that do
# nothing now but are worth knowing before the moment comes.
LISTED_WHEN_HIDDEN = {"cancel-job": "while a model job runs"}

# Keys declared elsewhere (a tree's own, the screen's) that do something particular in a pane:
# pane class → (action, what the key does there), listed in the pane's group when a press reaches them.
ALSO_IN_PANE = {
    "SummaryPane": (
        ("toggle_node", "Open or close a chapter"),
        ("reload", "Read the manuscript again: summaries whose source changed turn ~ stale"),
    ),
}


def _words(name: str) -> str:
    """``ModelSettingsScreen`` → ``Model settings``: a class name as words, for a node not in TITLES."""
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", name) or [name]
    if len(words) > 1 and words[-1] == "Screen":
        words = words[:-1]
    return " ".join([words[0], *(w.lower() for w in words[1:])])


def _title(node: DOMNode, focused: DOMNode | None) -> str:
    if isinstance(node, App):
        return "Everywhere"
    name = type(node).__name__
    label = TITLES.get(name) or str(getattr(node, "border_title", "") or "") or _words(name)
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

    def add(node: DOMNode, binding: Binding, enabled: bool, description: str | None = None) -> None:
        nodes[id(node)] = node
        same = binding.id or (binding.action, binding.description)  # "u,ctrl+z" arrives as two bindings
        keys, row = rows.setdefault(id(node), {}).setdefault(same, ([], KeyRow(
            "", description or binding.description or binding.tooltip or binding.action, binding.id, enabled)))
        keys.append(app.get_key_display(binding))

    active = screen.active_bindings.values()
    for item in active:
        add(item.node, item.binding, item.enabled)
    for node, bindings in screen._modal_binding_chain:  # (with the keymap applied, as active_bindings)
        for _key, binding in bindings:
            when = LISTED_WHEN_HIDDEN.get(binding.id or "")
            if when and app._check_action_state(binding.action, node) is False:
                add(node, binding, False, f"{binding.description} ({when})")
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
    for node in chain:  # a pane in the focus chain: the keys that mean something particular there
        extra = tuple(row for action, description in ALSO_IN_PANE.get(type(node).__name__, ())
                      if (row := _row_for(active, app, action, description)) is not None)
        if not extra:
            continue
        at = next((i for i, g in enumerate(groups) if g.node is node), None)
        if at is None:
            at = next((i for i, g in enumerate(groups) if rank.get(id(g.node), len(chain)) > rank[id(node)]), len(groups))
            groups.insert(at, KeyGroup(_title(node, focused), node, extra))
        else:
            groups[at] = KeyGroup(groups[at].title, node, groups[at].rows + extra)
    if generic:  # last: the workbench's own keys come first, moving around is the same everywhere
        groups.append(KeyGroup(MOVING_AROUND, focused or screen, tuple(generic.values())))
    return groups


def _row_for(active: Iterable[ActiveBinding], app: App, action: str, description: str) -> KeyRow | None:
    """The keys a press of which reaches ``action`` now, as one row described for the pane; None if none does."""
    found = [a for a in active if a.binding.action == action]
    if not found:
        return None
    keys = ", ".join(dict.fromkeys(app.get_key_display(a.binding) for a in found))
    return KeyRow(keys, description, found[0].binding.id, any(a.enabled for a in found))


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
