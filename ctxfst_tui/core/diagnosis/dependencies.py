"""Dependency checks: dependencies on unknown or external chunks, and dependency cycles.

Cycles are found once over the whole workspace and reported in the document whose
``dependencies`` entry the fix removes.
"""
from __future__ import annotations

from dataclasses import dataclass

from rapidfuzz.distance import OSA

from ctxfst_tui.core.diagnosis.index import DocumentDiagnosis, IndexedChunk, WorkspaceIndex
from ctxfst_tui.core.diagnosis.wording import show_ref
from ctxfst_tui.core.format.document import Entry, jsonable


@dataclass
class DependencyCycle:
    """A dependency loop and the edge its fix removes (``source`` depends on ``target``, in ``entry``)."""

    nodes: list[str]
    source: str
    target: str
    doc: int
    entry: Entry
    forward: bool


def dependency_cycles(ws: WorkspaceIndex) -> None:
    """Each cycle of the workspace's dependency graph once, with the one edge whose removal breaks it."""
    edges: list[tuple[str, str]] = []
    where: dict[tuple[str, str], tuple[IndexedChunk, int]] = {}
    order: dict[str, int] = {}
    for c in ws.chunks:
        order.setdefault(c.id, c.order)
        deps = c.entry.data.get("dependencies")
        if not isinstance(deps, list):
            continue
        for dep in deps:
            if isinstance(dep, str) and dep in ws.chunk_docs:
                edges.append((c.id, dep))
                where.setdefault((c.id, dep), (c, c.doc))
    if _acyclic(edges):
        return  # the usual case: no need to load networkx (a large import) at all
    import networkx as nx

    g = nx.DiGraph()
    g.add_edges_from(edges)  # the same nodes and edges, in the same order, as one add_edge each
    for scc in sorted(nx.strongly_connected_components(g), key=lambda s: min(order.get(n, 0) for n in s)):
        start = min(scc, key=lambda n: order.get(n, 0))
        if len(scc) == 1 and not g.has_edge(start, start):
            continue
        edges = nx.find_cycle(g.subgraph(scc), source=start)
        nodes = [u for u, _ in edges]
        # remove the edge pointing furthest forward (prerequisites usually come first); else the last one
        forwards = [(a, b) for a, b in edges if order.get(b, 0) > order.get(a, 0)]
        forward = bool(forwards)
        u, v = max(forwards, key=lambda e: order.get(e[1], 0) - order.get(e[0], 0)) if forwards else edges[-1]
        chunk, doc = where[(u, v)]
        ws.cycles.append(DependencyCycle(nodes, u, v, doc, chunk.entry, forward))


def _acyclic(edges: list[tuple[str, str]]) -> bool:
    """True when the directed graph of ``edges`` has no cycle (no self-loop either): Kahn's algorithm."""
    succ: dict[str, set[str]] = {}
    indegree: dict[str, int] = {}
    for u, v in edges:
        indegree.setdefault(u, 0)
        targets = succ.setdefault(u, set())
        if v not in targets:
            targets.add(v)
            indegree[v] = indegree.get(v, 0) + 1
    ready = [n for n, k in indegree.items() if k == 0]
    done = 0
    while ready:
        n = ready.pop()
        done += 1
        for m in succ.get(n, ()):
            indegree[m] -= 1
            if not indegree[m]:
                ready.append(m)
    return done == len(indegree)


def dependencies(d: DocumentDiagnosis) -> None:
    """Dependencies on chunks that exist nowhere, on other documents, and dependency cycles."""
    mine = {c.id for c in d.chunks}
    for c in d.chunks:
        deps = c.entry.data.get("dependencies")
        if not isinstance(deps, list):
            continue
        at = d.at(c.entry, "dependencies")
        for dep in deps:
            if isinstance(dep, str) and dep in mine:
                continue
            if isinstance(dep, str) and d.ws is not None and dep in d.ws.chunk_docs:
                others = sorted({d.ws.docs[k].label for k in d.ws.chunk_docs[dep]})
                d.add("dependencies", "dependency-external", [c.id],
                      f"Dependency '{dep}' is a chunk of another document ({', '.join(others)})",
                      "Fine within this workspace, but the document alone does not resolve it "
                      "(validate warns); keep the documents together.", at=at, dependency=dep)
                continue
            near = _near_chunk(d, dep) if isinstance(dep, str) else None
            d.add("dependencies", "dependency-unknown", [c.id],
                  f"Dependency {show_ref(dep)} is not a chunk of this workspace",
                  (f"Did you mean '{near}'? " if near else "") + "Fix the id, or remove the dependency.",
                  {"op": "remove_dependency", "chunk_id": c.id, "dependency": jsonable(dep)}, at,
                  dependency=jsonable(dep))
    for cyc in d.ws.cycles if d.ws else []:
        if cyc.doc != d.number:
            continue
        loop = " -> ".join([*cyc.nodes, cyc.nodes[0]])
        files = sorted({d.ws.docs[k].label for n in cyc.nodes for k in d.ws.chunk_docs.get(n, [])})
        d.add("dependencies", "dependency-cycle", list(cyc.nodes),
              f"Dependency cycle: {loop}" + (" (a chunk depends on itself)" if len(cyc.nodes) == 1 else ""),
              f"A prerequisite order cannot be circular: remove the dependency of '{cyc.source}' on '{cyc.target}'"
              + (" (it points forward in the document)" if cyc.forward else "") + ".",
              {"op": "remove_dependency", "chunk_id": cyc.source, "dependency": cyc.target},
              at=d.at(cyc.entry, "dependencies"), cycle=[*cyc.nodes, cyc.nodes[0]],
              files=files if len(files) > 1 else None)


def _near_chunk(d: DocumentDiagnosis, dep: str) -> str | None:
    """The one chunk id within two edits of ``dep``, for a 'did you mean'."""
    ids = list(d.ws.chunk_docs) if d.ws else [c.id for c in d.chunks]
    close = [i for i in ids if OSA.distance(dep, i) <= 2]
    return close[0] if len(close) == 1 else None
