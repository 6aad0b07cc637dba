"""How values are written into issue messages and the JSON report.

Frontmatter values can be anything YAML allows; messages must name them readably and the report
must stay serialisable, whatever a document holds.
"""
from __future__ import annotations

import json
from typing import Any


def kind_of(value: Any) -> str:
    """A YAML value's kind in words, for messages."""
    kinds = ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string"),
             (list, "a list"), (dict, "a mapping"), (type(None), "null"))
    return next((k for t, k in kinds if isinstance(value, t)), f"a {type(value).__name__}")


def show_ref(value: Any) -> str:
    """An entity reference for a message: strings as written, anything else marked as not an id."""
    if isinstance(value, str):
        return value
    return f"{json.dumps(value, default=str)} ({kind_of(value)}, not an id string)"


def json_ref(value: Any) -> Any:
    """A reference value safe for the JSON report."""
    return value if isinstance(value, (str, int, float, bool)) or value is None else json.dumps(value, default=str)


def quote_list(items: list[str], limit: int = 5) -> str:
    shown = ", ".join(f"'{x}'" for x in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
