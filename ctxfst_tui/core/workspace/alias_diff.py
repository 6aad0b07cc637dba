"""An entity's aliases before and after an edit, as the alias operations that get from one to the other.

Aliases compare case-insensitively and ignoring surrounding blanks (as ``add_alias`` and
``remove_alias`` match them), so retyping an alias in another case changes nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ctxfst_tui.core.workspace.entity_ops import add_alias, remove_alias

Step = tuple[Callable[..., Any], tuple, dict]  # (operation, args after the workspace, kwargs)


def _fold(alias: str) -> str:
    return alias.strip().casefold()


@dataclass(frozen=True)
class AliasDiff:
    """The aliases of ``entity_id`` to remove and to add (each in the order given)."""

    entity_id: str
    removed: tuple[str, ...]
    added: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.removed or self.added)

    @property
    def steps(self) -> list[Step]:
        """The operations, removals first, for one undoable ``run_all``."""
        return ([(remove_alias, (self.entity_id, a), {}) for a in self.removed]
                + [(add_alias, (self.entity_id, a), {}) for a in self.added])

    @property
    def description(self) -> str:
        parts = ([f"add {', '.join(self.added)}"] if self.added else []) + \
                ([f"remove {', '.join(self.removed)}"] if self.removed else [])
        return f"{'; '.join(parts)} (aliases of {self.entity_id})"


def diff_aliases(entity_id: str, old: list[str], new: list[str]) -> AliasDiff:
    """What changes from ``old`` to ``new`` aliases; false (empty) when nothing does."""
    kept_new = {_fold(n) for n in new}
    kept_old = {_fold(o) for o in old}
    return AliasDiff(entity_id,
                     removed=tuple(a for a in old if _fold(a) not in kept_new),
                     added=tuple(a for a in new if _fold(a) not in kept_old))
