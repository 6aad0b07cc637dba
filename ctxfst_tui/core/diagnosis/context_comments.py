"""Contexts left in the body as ``<!-- Context: ... -->`` by the reference's ``contextualize_chunks.py``.

Export and retrieval read the frontmatter ``context``; the comment is only part of the content.
A comment with no frontmatter context (or the same one) is moved there by the fix; a comment that
disagrees with the frontmatter gets no fix, since keeping either one drops the other's words.
"""
from __future__ import annotations

from ctxfst_tui.core.diagnosis.index import DocumentDiagnosis
from ctxfst_tui.core.format.context_comment import find_context_comment, same_context


def move_fix(chunk_id: str, comment_text: str, context: str) -> dict:
    """The fix that moves a chunk's context comment into its frontmatter ``context``."""
    return {"op": "move_context_comment", "chunk_id": chunk_id, "context": comment_text, "replaces": context}


def context_comments(d: DocumentDiagnosis) -> None:
    """Chunks whose body opens with a context comment."""
    for c in d.chunks:
        comment = find_context_comment(c.body) if c.body is not None else None
        if comment is None:
            continue
        at = d.doc.index.position(comment.start)
        if not c.context.strip():
            d.add("context_quality", "context-in-comment", [c.id],
                  "Context is in a <!-- Context: --> comment in the body, not in the frontmatter",
                  "Move it into the chunk's 'context' field, which export and retrieval read "
                  "(the fix does, and removes the comment).",
                  move_fix(c.id, comment.text, c.context), at)
        elif same_context(c.context, comment.text):
            d.add("context_quality", "context-in-comment", [c.id],
                  "Context is both in the frontmatter and in a <!-- Context: --> comment in the body",
                  "Remove the comment: it is exported as part of the content (the fix removes it).",
                  move_fix(c.id, comment.text, c.context), at)
        else:
            d.add("context_quality", "context-conflict", [c.id],
                  "The frontmatter context and the body's <!-- Context: --> comment differ; "
                  "export uses the frontmatter's",
                  "Keep one: put the words you want in the 'context' field and delete the comment "
                  "(no automatic fix: either choice loses the other's words).", at=at)
