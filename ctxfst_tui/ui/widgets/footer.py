"""The key footer: one line, drawn by one widget, listing the focused pane's keys, then the ones
that work everywhere, then the screen's; a key that does not fit is left out whole.

Why one widget: Textual's Footer mounts a widget per key and re-mounts them all whenever the keys
change (each view switch, each focus change between panes), and every mount is styled and laid out.
In the workbench that was a fifth of the CPU a view switch cost. Here a change of keys is a repaint
of one line whose size never changes, so no layout runs at all.

Why this order: Textual lists the keys of the focused widget, its containers, the screen, then the
App, so on a narrow terminal the App's `q Quit` and `? Help` — what a newcomer looks for — were the
first cut, and the last key shown was cut mid-word (`? Hel▏`).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import App
from textual.screen import Screen
from textual.widget import Widget


@dataclass(frozen=True)
class FooterItem:
    """One entry of the footer: a key (or a group's keys) and what it does."""

    keys: tuple[tuple[str, str], ...]  # (key, how it is shown), pressed on a click
    action: str
    description: str
    enabled: bool
    tooltip: str

    @property
    def key_text(self) -> str:
        """The keys as shown: view digits run together (``123456``), other keys a space apart."""
        shown = [text for _, text in self.keys]
        return "".join(shown) if all(len(t) == 1 and t.isdigit() for t in shown) else " ".join(shown)

    @property
    def width(self) -> int:
        """Cells taken: `` key `` then ``description `` (the padding Textual's FooterKey has)."""
        return cell_len(self.key_text) + 2 + (cell_len(self.description) + 1 if self.description else 0)


def ordered_bindings(screen: Screen) -> list:
    """The shown active bindings: the focused pane's (and its containers'), the App's, the screen's."""
    shown = [item for item in screen.active_bindings.values() if item.binding.show]
    rank = {"pane": 0, "app": 1, "screen": 2}
    where = lambda item: "app" if isinstance(item.node, App) else "screen" if item.node is screen else "pane"  # noqa: E731
    return sorted(shown, key=lambda item: rank[where(item)])  # stable: each keeps its own order


def footer_items(screen: Screen) -> list[FooterItem]:
    """The entries to show: bindings of one action are one entry (its first key), and neighbouring
    actions of one binding group are one entry with the group's description (``u U Undo/redo``)."""
    app = screen.app
    by_action: dict[str, tuple] = {}
    for item in ordered_bindings(screen):
        by_action.setdefault(item.binding.action, (item.binding, item.enabled, item.tooltip))
    items: list[FooterItem] = []
    for group, members in groupby(by_action.values(), lambda entry: entry[0].group):
        members = list(members)
        if group is not None and len(members) > 1:
            items.append(FooterItem(tuple((b.key, app.get_key_display(b)) for b, _, _ in members),
                                    members[0][0].action, group.description,
                                    any(enabled for _, enabled, _ in members),
                                    " · ".join(tip or b.description for b, _, tip in members)))
        else:
            items += [FooterItem(((b.key, app.get_key_display(b)),), b.action, b.description, enabled,
                                 tip or b.description)
                      for b, enabled, tip in members]
    return items


def palette_item(screen: Screen) -> FooterItem | None:
    app = screen.app
    if not app.ENABLE_COMMAND_PALETTE:
        return None
    palette = screen.active_bindings.get(app.COMMAND_PALETTE_BINDING)
    if palette is None:
        return None
    _node, binding, enabled, tooltip = palette
    return FooterItem(((binding.key, app.get_key_display(binding)),), binding.action, binding.description, enabled,
                      tooltip or binding.tooltip or binding.description)


def fit(items: list[FooterItem], width: int, keep: str = "help") -> list[FooterItem]:
    """The leading items that fit in ``width`` cells whole (the first that does not ends the line),
    and the ``keep`` action's item at the end when it would not otherwise be shown."""
    def leading(room: int) -> list[FooterItem]:
        shown, used = [], 0
        for item in items:
            if used + item.width > room:
                break
            shown.append(item)
            used += item.width
        return shown

    shown = leading(width)
    kept = next((item for item in items if item.action == keep), None)
    if kept is None or kept in shown or kept.width > width:
        return shown
    return [item for item in leading(width - kept.width) if item is not kept] + [kept]


class KeyFooter(Widget, can_focus=False):
    """The footer line; a click on an entry presses its key, hovering shows its tooltip."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"footer-key--key", "footer-key--description", "footer-key--hover",
                         "footer-key--disabled", "footer-key--separator"}
    DEFAULT_CSS = """
    KeyFooter {
        dock: bottom;
        height: 1;
        width: 1fr;
        text-wrap: nowrap;
        color: $footer-foreground;
        background: $footer-background;
        .footer-key--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        .footer-key--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        .footer-key--hover {
            color: $footer-key-foreground;
            background: $block-hover-background;
        }
        .footer-key--disabled {
            text-style: dim;
        }
        .footer-key--separator {
            color: $foreground 20%;
        }
        &:hover {
            pointer: pointer;
        }
    }
    """

    def __init__(self, *, show_command_palette: bool = True, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.show_command_palette = show_command_palette
        self.items: list[FooterItem] = []
        self.palette: FooterItem | None = None
        self._hover: FooterItem | None = None
        self._spans: list[tuple[int, int, FooterItem]] = []  # where each drawn entry is: [start, end)

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self.bindings_changed)
        self._update(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def bindings_changed(self, screen: Screen) -> None:
        """Repaint when the keys to show changed; the footer's size never does, so no layout."""
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self._update(screen)

    def _update(self, screen: Screen) -> None:
        items = footer_items(screen)
        palette = palette_item(screen) if self.show_command_palette else None
        if (items, palette) != (self.items, self.palette):
            self.items, self.palette = items, palette
            self.refresh()

    @property
    def shown(self) -> list[FooterItem]:
        """The entries drawn at the current width (the palette key not included)."""
        return [item for _, _, item in self._spans if item is not self.palette]

    def _entry(self, item: FooterItem, *, pad: bool = True) -> Text:
        key_style = self.get_component_rich_style("footer-key--key")
        description_style = self.get_component_rich_style("footer-key--description")
        if item is self._hover:
            hover = self.get_component_rich_style("footer-key--hover")
            key_style, description_style = key_style + hover, description_style + hover
        if not item.enabled:
            dim = self.get_component_rich_style("footer-key--disabled")
            key_style, description_style = key_style + dim, description_style + dim
        entry = Text.assemble((f"{' ' if pad else ''}{item.key_text} ", key_style))
        if item.description:
            entry.append(f"{item.description} ", description_style)
        return entry

    def render(self) -> Text:
        width = self.size.width
        line = Text(no_wrap=True, overflow="crop", end="")
        spans: list[tuple[int, int, FooterItem]] = []
        palette_width = self.palette.width if self.palette is not None else 0  # "▏" takes the left pad
        if palette_width > width // 2:
            palette_width = 0  # a very narrow terminal: the pane's keys come first
        for item in fit(self.items, width - palette_width):
            start = line.cell_len
            line.append_text(self._entry(item))
            spans.append((start, line.cell_len, item))
        if palette_width:
            line.append(" " * (width - palette_width - line.cell_len))
            line.append("▏", self.get_component_rich_style("footer-key--separator"))
            start = line.cell_len
            line.append_text(self._entry(self.palette, pad=False))
            spans.append((start, line.cell_len, self.palette))
        self._spans = spans
        line.stylize_before(Style.null())
        return line

    def item_at(self, x: int) -> FooterItem | None:
        return next((item for start, end, item in self._spans if start <= x < end), None)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        item = self.item_at(event.x)
        if item is not self._hover:
            self._hover = item
            self.tooltip = item.tooltip if item is not None else None
            self.refresh()

    def on_leave(self, event: events.Leave) -> None:
        if self._hover is not None:
            self._hover = None
            self.tooltip = None
            self.refresh()

    def on_mouse_down(self, event: events.MouseDown) -> None:
        item = self.item_at(event.x)
        if item is None:
            return
        if not item.enabled:
            self.app.bell()
        else:
            self.app.simulate_key(item.keys[0][0])
