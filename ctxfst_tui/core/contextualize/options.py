"""What a contextualize run is asked to do, and the error for options it cannot honour.

Its own module because every stage reads it: the material (which chunks), the prompts (style,
sizes), the gate (limits, grounding) and the run (concurrency, retries).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class ContextualizeError(ValueError):
    """Bad options (e.g. an unreadable template) or an unreadable document; the message is one line."""


@dataclass
class ContextualizeOptions:
    """How notes are generated and which chunks get one.

    ``document_max_chars``: the whole-document part of the prompt is cut to this many
    characters around the chunk (the chunk itself to the same limit). ``template``: a path
    (or the text, with ``template_text``) of a user prompt. ``style``: ``"auto"`` (instruct
    for chat backends, fewshot otherwise), ``"fewshot"`` or ``"instruct"``. ``concurrency``:
    chunks in flight (default: the backend's ``concurrency``, 1 for in-process models).
    ``verify_terms``: keep only model terms that occur in the chunk; ``ground_sentences``:
    drop sentences (after the first) whose content words mostly do not occur in the document,
    and reject the note when its first sentence is such (both default to on with the few-shot
    prompt, for small models that make things up). ``chunk_ids``: only these chunks.
    """

    skip_present: bool = False
    fail_fast: bool = False
    document_max_chars: int = 6000
    template: str | Path | None = None
    template_text: str | None = None
    dry_run: bool = False
    style: str = "auto"
    max_tokens: int = 120
    max_note_chars: int = 600
    max_sentences: int = 3
    max_terms: int = 12
    temperature: float = 0.0
    retry: bool = True
    verify_terms: bool | None = None
    ground_sentences: bool | None = None
    add_exact_terms: bool = True
    concurrency: int | None = None
    chunk_ids: list[str] | None = None
