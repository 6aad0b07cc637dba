"""After an edit: what a re-summary of an already summarized tree visits.

The spec's first trigger is the writer saving a scene or chapter ("save de arquivo"): the
summaries then follow the text. :func:`refresh_scope` is the part of the tree such a run goes
through, children before parents:

* every ``stale`` node (a summary whose source changed: the edited scenes and, since a
  chapter's source covers its scenes, their chapters, parts and the book);
* a ``pending`` scene under a stale parent (a scene the edit added, e.g. a new ``***``);
* the scene after an edited one (its prompt carries the edited scene's last sentences: it is
  reused without a call unless those changed);
* the ancestors of all these that have a summary (a scene reached that way may sit in the next
  chapter).

Nodes never summarized stay out (a book summarized up to chapter 3 is not extended by a save),
and so do failed nodes whose source did not change. Every visited node goes through the
incremental path of :class:`~.summarizer.Summarizer`: one whose input hash is stored is reused
without a call, so one edited scene costs three calls (scene, chapter, book).
"""
from __future__ import annotations

from dataclasses import dataclass

from ctxfst_tui.core.summary.tree import Manuscript, Node


@dataclass(frozen=True)
class RefreshPlan:
    """What a re-summary would do: ``nodes`` visited, ``edited`` stale scenes, ``stale`` stale nodes."""

    nodes: int
    edited: int
    stale: int

    @property
    def what(self) -> str:
        """As the status line says it: "2 edited scenes", or "3 changed nodes" when no scene is stale
        (a heading edited)."""
        if self.edited:
            return f"{self.edited} edited scene{'s' if self.edited != 1 else ''}"
        return f"{self.stale} changed node{'s' if self.stale != 1 else ''}"


def refresh_scope(ms: Manuscript) -> list[Node]:
    """The nodes a re-summary visits, children before parents (see the module doc)."""
    root = ms.root
    parent_of = {id(c): n for n in root.walk() for c in n.children}
    seeds: set[int] = set()
    for node in root.walk():
        if node.front_matter:
            continue
        if node.status == "stale":
            seeds.add(id(node))
        elif node.kind == "scene" and node.status == "pending":
            parent = parent_of.get(id(node))
            if parent is not None and parent.status == "stale":
                seeds.add(id(node))
    scenes = [s for s in root.scenes() if not s.front_matter]
    edited = set(seeds)  # the scene after an edited one, not the one after that
    for before, after in zip(scenes, scenes[1:]):
        if id(before) in edited and after.status == "done":
            seeds.add(id(after))
    chosen = set(seeds)
    for node in root.walk():
        if id(node) not in seeds:
            continue
        up = parent_of.get(id(node))
        while up is not None:
            if up.status != "pending" and not up.front_matter:
                chosen.add(id(up))
            up = parent_of.get(id(up))
    return [n for n in root.post_order() if id(n) in chosen]


def refresh_plan(ms: Manuscript) -> RefreshPlan:
    """How much a re-summary of ``ms`` (statuses as :func:`~.store.apply_stored` set them) would visit."""
    stale = [n for n in ms.root.walk() if n.status == "stale" and not n.front_matter]
    edited = sum(1 for n in stale if n.kind == "scene")
    return RefreshPlan(len(refresh_scope(ms)) if stale else 0, edited, len(stale))
