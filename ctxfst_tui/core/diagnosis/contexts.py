"""Context-quality checks: contexts that are empty, short, long, placeholders or echoes.

The context is what retrieval embeds with the chunk, so an empty one gets a fix: a draft from
the chunk's heading and first sentence, marked as a draft so it is rewritten.
"""
from __future__ import annotations

import re

from ctxfst_tui.core.diagnosis.context_comments import move_fix
from ctxfst_tui.core.diagnosis.index import DocumentDiagnosis, IndexedChunk
from ctxfst_tui.core.diagnosis.terms import jaccard, word_set
from ctxfst_tui.core.format.context_comment import find_context_comment

# Thresholds of the reference, kept so findings match it.
ECHO_THRESHOLD = 0.7  # Jaccard of context words vs the content's first 15 words
ECHO_OPENER_WORDS = 15
CONTEXT_MIN_WORDS = 8
CONTEXT_MAX_WORDS = 50
CONTEXT_OPTIMAL = (12, 30)
DRAFT_MARK = "[DRAFT]"
TODO_MARK = "[TODO"
HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")


def context_quality(d: DocumentDiagnosis) -> None:
    """Contexts that are missing, too short, too long, placeholders, or only echo the chunk's first words."""
    lo, hi = CONTEXT_OPTIMAL
    for c in d.chunks:
        at = d.at(c.entry, "context")
        count = len(c.context.split())
        if count == 0:
            comment = find_context_comment(c.body) if c.body is not None else None
            if comment is not None:  # contextualize_chunks.py wrote it into the body: move it
                d.add("context_quality", "context-empty", [c.id], "Context is empty",
                      "The chunk's <!-- Context: --> comment holds one: the fix moves it into the 'context' field.",
                      move_fix(c.id, comment.text, c.context), at)
                continue
            draft = _draft_context(c)
            d.add("context_quality", "context-empty", [c.id], "Context is empty",
                  "Add a 15-25 word description that explains what this chunk covers "
                  "and how it differs from other chunks." + (" The fix writes a draft from the chunk's heading "
                                                             "and first sentence: rewrite it." if draft.startswith(DRAFT_MARK) else ""),
                  {"op": "set_context", "chunk_id": c.id, "context": draft, "replaces": c.context}, at)
            continue
        if DRAFT_MARK in c.context or TODO_MARK in c.context:
            d.add("context_quality", "context-placeholder", [c.id],
                  "Context is still a placeholder or a draft",
                  "Rewrite it as a 15-25 word description of what this chunk covers and why someone would search for it.",
                  at=at)
        if count < CONTEXT_MIN_WORDS:
            d.add("context_quality", "context-short", [c.id],
                  f"Context too short ({count} words, recommend {lo}-{hi})",
                  "Expand context with: what topic this covers, who would search for it, "
                  "and what makes it distinct from similar chunks.", at=at)
        if count > CONTEXT_MAX_WORDS:
            d.add("context_quality", "context-long", [c.id],
                  f"Context may be too verbose ({count} words, recommend {lo}-{hi})",
                  "Consider condensing to key differentiating information only.", at=at)
        if c.content:
            opener = " ".join(c.content.split()[:ECHO_OPENER_WORDS])
            if jaccard(word_set(c.context), word_set(opener)) > ECHO_THRESHOLD:
                d.add("context_quality", "context-echo", [c.id],
                      "Context appears to just repeat the content opening",
                      "Rewrite context to explain the chunk's role in the document "
                      "rather than summarizing its content.", at=at)


def _draft_context(c: IndexedChunk) -> str:
    """A draft context from the chunk's heading and first sentence, marked as a draft (or the reference's TODO)."""
    heading, sentence = "", ""
    for block in re.split(r"\n\s*\n", c.content):
        prose = []
        for line in block.splitlines():
            h = HEADING.match(line)
            if h:
                heading = heading or _plain(h.group(1))
            elif line.strip() and not line.lstrip().startswith(("```", "~~~", "|", "<")):
                prose.append(line.strip())
        if prose and not sentence:
            text = _plain(" ".join(prose))
            sentence = re.split(r"(?<=[.!?])\s+", text, maxsplit=1)[0]
        if sentence:
            break
    words = " ".join(x for x in (heading + ":" if heading and sentence else heading, sentence) if x).split()
    if not words:
        return f"[TODO: Describe the purpose and unique aspects of {c.id}]"
    text = " ".join(words[:30]) + ("..." if len(words) > 30 else "")
    return f"{DRAFT_MARK} {text}"


def _plain(text: str) -> str:
    """Markdown inline syntax removed: links keep their text, emphasis/code marks and list markers go."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", text)
    text = re.sub(r"[`*_>]+", "", text)
    return " ".join(text.split())
