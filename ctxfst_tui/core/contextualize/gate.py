"""What a model's answer must pass before it becomes a chunk's context.

Parsing: the answer is cut at anything that starts a new example and wrapped lines are
joined (:func:`parse_note`). A note is **rejected** (:class:`NoteGate`) when its first sentence
is empty, longer than ``max_note_chars``, echoes the chunk (half of its word 4-grams are the
chunk's), copies the prompt (its examples, instructions or field labels), repeats itself,
or — with the few-shot prompt — is not grounded (most of its content words occur nowhere in
the document) or says nothing the title and section do not already say. Later sentences
failing a check are dropped; at most ``max_sentences`` are kept.

Terms (:func:`final_terms`): the model's terms, de-duplicated; with the few-shot prompt
(small models invent terms and copy the examples') only those that occur in the chunk; then
the exact terms found in the chunk itself (code spans, known technology names, acronyms)
complete the line, up to ``max_terms``. :func:`compose_note` writes the note as stored.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ctxfst_tui.core.contextualize.material import ChunkJob, DocMaterial
from ctxfst_tui.core.contextualize.options import ContextualizeOptions
from ctxfst_tui.core.contextualize.prompts import Prompt
from ctxfst_tui.core.llm.base import Completion
from ctxfst_tui.core.text.stems import prefix_stem
from ctxfst_tui.core.text.stopwords import NOTE_FILLER_WORDS
from ctxfst_tui.core.text.words import note_words

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[A-Z0-9\"'(`])")
# lines that mean the model has started a new example or is reciting the prompt
_MARKERS = re.compile(
    r"^\s*(?:#{2,}|={3,}|-{3,}|Document\s*:|Title\s*:|Outline\s*:|Section\s*:|Sections\s*:|Chunk\s*:|Text\s*:|Note\s*:|"
    r"Example\b|</?\s*(?:note|chunk|document)\b)",
    re.IGNORECASE,
)
_LABELS = re.compile(r"\b(?:Document|Outline|Section|Chunk|Note|Terms)\s*:", re.IGNORECASE)


def _ngrams(words: list[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]


def _split_sentences(text: str) -> list[str]:
    """Not :func:`~ctxfst_tui.core.text.sentences.split_sentences`: the gate's limits were tuned on this
    cut (after ``.!?`` and one closing mark, before a capital, digit, quote or backtick; no abbreviations)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


@dataclass
class ParsedNote:
    """A model answer split into note sentences and terms (``truncated``: cut by the token limit)."""

    sentences: list[str]
    terms: list[str]
    raw: str
    truncated: bool
    all_sentences: list[str] = field(default_factory=list)


def parse_note(text: str, prefix: str = "", finish_reason: str = "stop") -> ParsedNote:
    """Split a model answer into note sentences and terms, dropping what follows a new example."""
    full = (prefix + " " + text) if prefix else text
    lines = full.replace("\r\n", "\n").split("\n")
    prose: list[str] = []
    terms_text = ""
    for i, line in enumerate(lines):
        stripped = line.strip()
        if i > 0 and _MARKERS.match(line):
            break
        m = re.match(r"^\W{0,3}(?:exact\s+)?(?:key\s+)?terms?\s*[:\-]\s*(.*)$", stripped, re.IGNORECASE)
        if m:
            terms_text = m.group(1)
            break
        if i == 0:
            stripped = re.sub(r"^\s*(?:retrieval\s+)?note\s*:\s*", "", stripped, flags=re.IGNORECASE)
        if stripped:
            prose.append(stripped)
    body = " ".join(prose)
    body = re.sub(r"\s+", " ", body).strip().strip('"').strip()
    sentences = _split_sentences(body)
    truncated = False
    if sentences and finish_reason == "length" and not terms_text and not re.search(r"[.!?][\"')\]]?$", sentences[-1]):
        sentences = sentences[:-1]  # cut mid-sentence by max_tokens
        truncated = True
    terms = _split_terms(terms_text)
    return ParsedNote(sentences, terms, text, truncated, list(sentences))


def _split_terms(text: str) -> list[str]:
    if not text.strip():
        return []
    sep = ";" if ";" in text else ","
    out: list[str] = []
    seen: set[str] = set()
    for t in text.split(sep):
        t = t.strip().strip(".").strip()
        t = re.sub(r"^[`'\"]+|[`'\"]+$", "", t).strip()
        if not t or len(t) > 60:
            continue
        key = t.casefold()
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def _norm(text: str) -> str:
    return " ".join(note_words(text))


class NoteGate:
    """The quality checks. The first sentence must pass them all (else the note is rejected);
    a later sentence that fails one is dropped, with everything after it."""

    def __init__(self, options: ContextualizeOptions, material: DocMaterial, job: ChunkJob, prompt: Prompt):
        self.options = options
        self.material = material
        self.prompt = prompt
        chunk_words = note_words(job.raw)
        self.chunk_4 = set(_ngrams(chunk_words, 4))
        self.chunk_norm = " ".join(chunk_words)
        doc_words = note_words(material.body) + note_words(material.title)
        self.doc_4 = set(_ngrams(doc_words, 4))
        boiler = note_words(prompt.boilerplate)
        self.boiler_4 = set(_ngrams(boiler, 4)) - self.doc_4
        self.boiler_3 = set(_ngrams(boiler, 3)) - set(_ngrams(doc_words, 3))
        self.prefix_words = note_words(prompt.prefix)
        small = prompt.kind == "fewshot"
        self.ground = options.ground_sentences if options.ground_sentences is not None else small
        self.vocab = {prefix_stem(w) for w in doc_words} if self.ground else set()
        self.skip = {prefix_stem(w) for w in self.prefix_words}

    def _own_words(self, sentence: str, first: bool) -> list[str]:
        words = note_words(sentence)
        if first and self.prefix_words and words[: len(self.prefix_words)] == self.prefix_words:
            words = words[len(self.prefix_words):]
        return words

    def sentence_problem(self, sentence: str, first: bool) -> str | None:
        words = self._own_words(sentence, first)
        if len(words) < (1 if first and self.prefix_words else 4):
            return "empty note" if first else "too short"
        if _LABELS.search(sentence) or ("{" in sentence and "}" in sentence):
            return "echoes the prompt's format"
        grams4 = _ngrams(words, 4)
        if grams4:
            in_chunk = sum(1 for g in grams4 if g in self.chunk_4) / len(grams4)
            if in_chunk >= 0.5:
                return f"echoes the chunk ({in_chunk:.0%} of its word 4-grams are the chunk's)"
            copied = sum(1 for g in grams4 if g in self.boiler_4)
            if copied >= 2 or copied / len(grams4) >= 0.2:
                return "copies the prompt's examples"
        elif len(words) >= 3 and " ".join(words) in self.chunk_norm and len(words) >= len(note_words(sentence)) * 0.8:
            return "echoes the chunk"
        grams3 = _ngrams(words, 3)
        if grams3 and sum(1 for g in grams3 if g in self.boiler_3) >= 2:
            return "copies phrases of the prompt's examples"
        counts: dict[tuple[str, ...], int] = {}
        for g in grams3:
            counts[g] = counts.get(g, 0) + 1
        content = [w for w in words if len(w) > 2]
        if (counts and max(counts.values()) >= 3) or (len(content) >= 12 and len(set(content)) / len(content) < 0.5):
            return "repeats itself"
        if self.ground:
            parts = [p for w in words for p in re.split(r"[-/.]", w)]
            cw = [w for w in parts if len(w) >= 4 and w.isalpha() and w not in NOTE_FILLER_WORDS and prefix_stem(w) not in self.skip]
            if len(cw) >= 2 and sum(1 for w in cw if prefix_stem(w) in self.vocab) / len(cw) < 0.6:
                return "not grounded in the document (most of its words do not occur there)"
        return None

    def check(self, parsed: ParsedNote, completion: Completion) -> str | None:
        """The reason to reject the note, or None (``parsed.sentences`` is then trimmed)."""
        sentences = parsed.sentences
        if not sentences:
            if completion.finish_reason == "length":
                return "ran past the length limit without finishing a sentence"
            return "empty note"
        if len(sentences[0]) > self.options.max_note_chars:
            return f"too long ({len(sentences[0])} characters in one sentence, limit {self.options.max_note_chars})"
        why = self.sentence_problem(sentences[0], True)
        if why is not None:
            return why
        kept = [sentences[0]]
        seen = {_norm(sentences[0])}
        for s in sentences[1:]:
            if len(kept) >= self.options.max_sentences or _norm(s) in seen or self.sentence_problem(s, False) is not None:
                break
            seen.add(_norm(s))
            kept.append(s)
        if len(kept) == 1 and self.prefix_words:
            own = [w for w in self._own_words(kept[0], True) if len(w) >= 4 and w.isalpha() and w not in NOTE_FILLER_WORDS]
            frame = {prefix_stem(w) for w in self.prefix_words}
            if all(prefix_stem(w) in frame for w in own):
                return "says nothing the title and section do not already say"
        parsed.sentences = kept
        return None


def final_terms(parsed: ParsedNote, material: DocMaterial, job: ChunkJob, options: ContextualizeOptions,
                verify: bool) -> list[str]:
    """The Terms line of an accepted note (``verify``: only model terms that occur in the chunk)."""
    doc_lines = [" ".join(ln.split()).casefold() for ln in job.raw.splitlines()]
    chunk_code = {m.group(2).strip().casefold() for m in re.finditer(r"(`+)(.+?)\1", job.raw)}
    drop = {material.title.casefold(), job.heading.casefold()}
    terms: list[str] = []
    seen: set[str] = set()

    def add(t: str) -> None:
        key = _norm(t) or t.casefold()
        if key and key not in seen and len(terms) < options.max_terms:
            seen.add(key)
            terms.append(t)

    for t in parsed.terms:
        folded = " ".join(t.split()).casefold()
        if folded in drop:
            continue
        if verify:
            pattern = r"(?<![\w-])" + re.escape(folded) + r"(?![\w-])"
            if not any(re.search(pattern, ln) for ln in doc_lines) or not re.search(r"[A-Za-z]\w|\d{3}", t):
                continue  # not in the chunk: made up or copied from the examples
            if re.fullmatch(r"[a-z]+", t) and folded not in chunk_code:
                continue  # a plain lowercase word is not an exact term
        add(t)
    if options.add_exact_terms:
        from ctxfst_tui.core.entities.extract import exact_terms

        for t in exact_terms(job.raw):
            add(t)
    return terms


def compose_note(sentences: list[str], terms: list[str], options: ContextualizeOptions) -> str:
    """The note as stored: the sentences on one line, then ``Terms: a; b; c`` on a second line."""
    kept: list[str] = []
    for s in sentences[: options.max_sentences]:
        if kept and len(" ".join(kept + [s])) > options.max_note_chars:
            break
        kept.append(s)
    prose = " ".join(kept)
    if len(prose) > options.max_note_chars:
        prose = prose[: options.max_note_chars].rsplit(" ", 1)[0].rstrip(",;:") + "..."
    if terms:
        return prose + "\nTerms: " + "; ".join(terms)
    return prose
