"""An Input of a fixed size: typing in it repaints the field, never the whole screen's layout.

Textual's Input sets its virtual size to the width of its text on every change, and a change of
a widget's virtual size asks the screen to lay out every widget again. On the workbench (about
190 widgets) that is about 7 ms a key at 120×40, twice the bare app's whole key-to-frame time, and
more while the index or a model job shares the cores. When the field's width and height are not
``auto`` nothing outside it can move as text is typed, so that one request is dropped; the field is
still repainted and still scrolls to its cursor (it reads its virtual size directly). Every other
layout request (a class that hides it, a border, a resize) goes through unchanged.
"""
from __future__ import annotations

from textual.widgets import Input


class FixedInput(Input):
    """``Input`` without the screen layout per typed character (see the module docstring)."""

    _typing = False

    def _watch_value(self, value: str) -> None:
        self._typing = True
        try:
            super()._watch_value(value)
        finally:
            self._typing = False

    def refresh(self, *regions, repaint: bool = True, layout: bool = False, recompose: bool = False):  # noqa: ANN002, ANN201
        if layout and self._typing and not self.styles.auto_dimensions:
            layout = False
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)
