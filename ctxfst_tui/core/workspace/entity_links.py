"""Which chunks of a document link an entity (their ``entities`` list names it).

The workbench marks those chunks in the chunk list and highlights them in the source when an
entity is selected; the scan belongs with the documents, not with the screen.
"""
from __future__ import annotations

from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.workspace.workspace import CHUNK_LINK_FIELD


def chunks_linking(doc: Document | None, entity_id: str) -> set[str]:
    """The ids of the chunks of ``doc`` whose link list names ``entity_id`` (none when unreadable)."""
    if doc is None or not doc.readable:
        return set()
    linking: set[str] = set()
    for entry in doc.entries("chunks"):
        links = entry.data.get(CHUNK_LINK_FIELD) if isinstance(entry.data, dict) else None
        if isinstance(links, list) and entity_id in links and isinstance(entry.id, str):
            linking.add(entry.id)
    return linking
