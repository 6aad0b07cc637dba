"""The key footer, rebuilt only when the keys it shows change.

Textual's Footer recomposes all of its keys on every bindings update, and an update is signalled on
each focus change, tab switch and worker reply even when the same keys stay shown: about six full
rebuilds of 18 widgets while the workbench starts, each restyled and laid out again. Comparing what
would be shown first keeps the footer as it is when nothing it draws has changed.
"""
from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    """A Footer that skips a rebuild when the shown keys, their state and tooltips are unchanged."""

    _shown: tuple | None = None

    def _keys_shown(self, screen: Screen) -> tuple:
        app = screen.app
        keys = tuple(
            (binding.key, app.get_key_display(binding), binding.description, binding.action,
             binding.group, enabled, tooltip)
            for (_, binding, enabled, tooltip) in screen.active_bindings.values()
            if binding.show
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
