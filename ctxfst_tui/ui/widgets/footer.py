"""The key footer: the focused pane's keys, then the ones that work everywhere, then the screen's;
rebuilt only when the keys it shows change.

Order: Textual lists the keys of the focused widget, its containers, the screen, then the App, so
on a narrow terminal the App's `q Quit` and `? Help` — what a newcomer looks for — were the first
cut. Rebuilds: Textual's Footer recomposes all of its keys on every bindings update, and an update
is signalled on each focus change, tab switch and worker reply even when the same keys stay shown
(about six full rebuilds of 18 widgets while the workbench starts). Comparing what would be shown
first keeps the footer as it is when nothing it draws has changed.
"""
from __future__ import annotations

from collections import defaultdict
from itertools import groupby

from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey, FooterLabel, KeyGroup


class KeyFooter(Footer):
    """A Footer that skips a rebuild when the shown keys, their state and tooltips are unchanged."""

    _shown: tuple | None = None

    @staticmethod
    def _ordered(screen: Screen) -> list:
        """The shown active bindings: the focused pane's (and its containers'), the App's, the screen's."""
        shown = [item for item in screen.active_bindings.values() if item.binding.show]
        rank = {"pane": 0, "app": 1, "screen": 2}
        where = lambda item: "app" if isinstance(item.node, App) else "screen" if item.node is screen else "pane"  # noqa: E731
        return sorted(shown, key=lambda item: rank[where(item)])  # stable: each keeps its own order

    def compose(self) -> ComposeResult:
        """Textual's Footer.compose (8.2), fed the bindings in ``_ordered`` order."""
        if not self._bindings_ready:
            return
        app = self.app
        by_action: defaultdict[str, list] = defaultdict(list)
        for item in self._ordered(self.screen):
            by_action[item.binding.action].append((item.binding, item.enabled, item.tooltip))
        self.styles.grid_size_columns = len(by_action)
        for group, multi in groupby(by_action.values(), lambda bindings: bindings[0][0].group):
            multi = list(multi)
            if group is not None and len(multi) > 1:
                with KeyGroup(classes="-compact" if group.compact else ""):
                    for bindings in multi:
                        binding, enabled, tooltip = bindings[0]
                        yield self._key(FooterKey(binding.key, app.get_key_display(binding), "", binding.action,
                                                  disabled=not enabled, tooltip=tooltip or binding.description,
                                                  classes="-grouped"))
                yield FooterLabel(group.description)
            else:
                for bindings in multi:
                    binding, enabled, tooltip = bindings[0]
                    yield self._key(FooterKey(binding.key, app.get_key_display(binding), binding.description,
                                              binding.action, disabled=not enabled, tooltip=tooltip))
        if self.show_command_palette and app.ENABLE_COMMAND_PALETTE:
            palette = self.screen.active_bindings.get(app.COMMAND_PALETTE_BINDING)
            if palette is not None:
                _node, binding, enabled, tooltip = palette
                yield FooterKey(binding.key, app.get_key_display(binding), binding.description, binding.action,
                                classes="-command-palette", disabled=not enabled,
                                tooltip=binding.tooltip or binding.description)

    def _key(self, key: FooterKey) -> FooterKey:
        """``key`` bound to the footer's compact flag, starting with its value: a FooterKey starts
        compact and restyles itself when the binding first sets it, one style pass per key."""
        key.set_reactive(FooterKey.compact, self.compact)
        key.set_class(self.compact, "-compact", update=False)
        return key.data_bind(compact=Footer.compact)

    def _keys_shown(self, screen: Screen) -> tuple:
        app = screen.app
        keys = tuple(
            (binding.key, app.get_key_display(binding), binding.description, binding.action,
             binding.group, enabled, tooltip)
            for (_, binding, enabled, tooltip) in self._ordered(screen)
        )
        palette = screen.active_bindings.get(app.COMMAND_PALETTE_BINDING)
        palette_key = (palette[1].key, palette[2]) if palette else None
        return keys, palette_key, self.show_command_palette, app.ENABLE_COMMAND_PALETTE

    def bindings_changed(self, screen: Screen) -> None:
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            shown = self._keys_shown(screen)
            if shown == self._shown:
                self._bindings_ready = True
                return
            self._shown = shown
        super().bindings_changed(screen)

    def watch_show_command_palette(self) -> None:
        self._shown = None  # shown or hidden palette key: the next update rebuilds
