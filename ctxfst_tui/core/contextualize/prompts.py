"""The prompts a model answers with a note for one chunk.

* ``fewshot`` (base models such as the bundled Gemma 3 270M, which has no chat template):
  a completion prompt of worked examples ending in the target's ``Note:`` line. The prompt
  writes the start of the note itself (``Part of "<title>" (<section>), about``), so every
  note names its document and section.
* ``instruct`` (a GGUF with a chat template, an endpoint's ``/chat/completions``): an
  instruction with the document and the chunk, answered as a note plus a ``Terms:`` line.
* a user template file: any text with the placeholders ``{document}``, ``{chunk}``,
  ``{breadcrumb}``, ``{heading}``, ``{title}``, ``{outline}`` (others are left as written).

Each has a ``tight`` variant for the retry after a rejected note (half the document, one
example, fewer tokens). A :class:`Prompt` also carries its boilerplate, so the gate can tell
a note that copies the prompt from one that uses the document's words.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ctxfst_tui.core.contextualize.material import ChunkJob, DocMaterial, clip, document_window
from ctxfst_tui.core.contextualize.options import ContextualizeError, ContextualizeOptions
from ctxfst_tui.core.text.words import one_line

TEMPLATE_FIELDS = ("document", "chunk", "breadcrumb", "heading", "title", "outline")
_PLACEHOLDER = re.compile(r"\{(" + "|".join(TEMPLATE_FIELDS) + r")\}")

FEWSHOT_EXAMPLES: list[dict[str, str]] = [
    {
        "title": "Billing API guide",
        "outline": "Authentication > Rate limits > Invoices",
        "heading": "Rate limits",
        "chunk": "Requests above 100 per minute get HTTP 429. Retry after the `Retry-After` header.",
        "note": "Part of \"Billing API guide\" (Rate limits), about the rate limit for API clients. It covers "
                "the HTTP 429 answer and the Retry-After header that says when to retry.",
        "terms": "rate limit; HTTP 429; Retry-After",
    },
    {
        "title": "Greenhouse watering manual",
        "outline": "Pump > Schedule > Winter storage",
        "heading": "Pump",
        "chunk": "The pump P-2 runs on 24 V. Error E7 means the float switch is dry.",
        "note": "Part of \"Greenhouse watering manual\" (Pump), about the P-2 pump and its error codes. It lists the "
                "24 V supply and error E7 for a dry float switch.",
        "terms": "pump P-2; 24 V; error E7; float switch",
    },
    {
        "title": "Postgres upgrade checklist",
        "outline": "Backups > Upgrade > Rollback",
        "heading": "Upgrade",
        "chunk": "Run `pg_upgrade --check` first. Keep the old data directory until the smoke tests pass.",
        "note": "Part of \"Postgres upgrade checklist\" (Upgrade), about moving a database to a new major version "
                "with pg_upgrade. It names the --check run and the old data directory kept until the smoke tests pass.",
        "terms": "pg_upgrade; --check; data directory; PostgreSQL",
    },
]

FEWSHOT_HEADER = (
    "Retrieval notes. Each note says in two sentences which document a chunk belongs to, "
    "what it is about and when it applies, then lists exact terms from the chunk.\n\n"
)


def _fewshot_block(ex: dict[str, str], with_answer: bool) -> str:
    out = (f"Document: {ex['title']}\nOutline: {ex['outline']}\nSection: {ex['heading']}\n"
           f"Chunk: {ex['chunk']}\nNote:")
    if with_answer:
        out += f" {ex['note']}\nTerms: {ex['terms']}\n###\n"
    return out


@dataclass
class Prompt:
    """One prompt: its text and kind, the note start it already wrote, stop strings, token budget."""

    text: str
    kind: str  # fewshot | instruct | template
    prefix: str  # text the note starts with (the part of the answer the prompt already wrote)
    stop: list[str]
    max_tokens: int
    boilerplate: str  # prompt text that is not the document or the chunk (for echo checks)


INSTRUCT_PROMPT = """<document>
{document}
</document>
Here is a chunk of this document:
<chunk>
{chunk}
</chunk>
Its place in the document: {breadcrumb}

Write a short retrieval note that situates this chunk within the whole document, to improve search retrieval of the chunk:
- two or three sentences naming the product or subject, the task, and the conditions the chunk assumes;
- then one line starting with "Terms:" listing the exact terms a search could use (names, identifiers, config keys, commands, error codes, acronyms with their expansion), separated by semicolons.
Do not copy the chunk. Answer with the note only."""

INSTRUCT_TIGHT = """Document: {title}
Section: {breadcrumb}
Chunk:
{chunk}

In at most two short sentences, say what this chunk is about and when it applies, without copying it. Then one line "Terms:" with exact terms from the chunk separated by semicolons. Answer with the note only."""


def _fill(template: str, values: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def build_prompt(material: DocMaterial, job: ChunkJob, options: ContextualizeOptions, *, chat: bool,
                 tight: bool = False, template: str | None = None) -> Prompt:
    """The prompt for one chunk (``tight``: the retry after a rejected note)."""
    limit = options.document_max_chars
    doc_part = document_window(material.body, job.start, job.end, limit // 2 if tight else limit)
    chunk_part = clip(job.raw, limit)
    values = {
        "document": doc_part, "chunk": chunk_part, "breadcrumb": job.breadcrumb or material.title,
        "heading": job.heading, "title": material.title, "outline": " > ".join(material.outline),
    }
    if template is not None:
        text = _fill(template, values)
        boiler = _PLACEHOLDER.sub(" ", template)
        if tight:
            text += "\n\n(Keep it to two sentences and one Terms line; do not copy the chunk.)\n"
        return Prompt(text, "template", "", [], options.max_tokens if not tight else max(48, options.max_tokens * 2 // 3), boiler)
    style = options.style if options.style != "auto" else ("instruct" if chat else "fewshot")
    if style == "instruct":
        tpl = INSTRUCT_TIGHT if tight else INSTRUCT_PROMPT
        return Prompt(_fill(tpl, values), "instruct", "", [], options.max_tokens if not tight else max(48, options.max_tokens * 2 // 3),
                      _PLACEHOLDER.sub(" ", tpl))
    # few-shot completion prompt for base models
    examples = FEWSHOT_EXAMPLES[:1] if tight else FEWSHOT_EXAMPLES
    shots = "".join(_fewshot_block(ex, True) for ex in examples)
    outline = " > ".join(material.outline) or material.title
    chunk_line = one_line(clip(job.content, min(limit, 1500 if tight else limit)))
    target = {"title": material.title, "outline": one_line(outline)[:400], "heading": job.heading or material.title,
              "chunk": chunk_line}
    prefix = f' Part of "{material.title}" ({job.heading or material.title}), about'
    text = FEWSHOT_HEADER + shots + _fewshot_block(target, False) + prefix
    boiler = FEWSHOT_HEADER + "".join(ex["note"] + "\n" + ex["terms"] + "\n" + ex["chunk"] + "\n" + ex["title"] + "\n" + ex["outline"]
                                      for ex in FEWSHOT_EXAMPLES)
    return Prompt(text, "fewshot", prefix.strip(), ["###", "\n\n", "\nDocument:", "\nChunk:"],
                  options.max_tokens if not tight else max(48, options.max_tokens * 2 // 3), boiler)


def load_template(options: ContextualizeOptions) -> str | None:
    """The user's prompt template (``template_text`` or the ``template`` file), or None for the built-in ones."""
    if options.template_text is not None:
        text = options.template_text
        where = "the template"
    elif options.template is not None:
        from ctxfst_tui.core.workspace.files import NotRegularFile, read_regular_text

        p = Path(options.template).expanduser()
        try:
            text = read_regular_text(p)  # a named pipe is refused, never opened (it would block)
        except NotRegularFile as exc:
            raise ContextualizeError(f"cannot read the template {p}: {exc.reason}") from exc
        except OSError as exc:
            raise ContextualizeError(f"cannot read the template {p}: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise ContextualizeError(f"the template {p} is not UTF-8 text") from exc
        where = str(p)
    else:
        return None
    if "{chunk}" not in text:
        raise ContextualizeError(f"{where} has no {{chunk}} placeholder (placeholders: {', '.join('{' + f + '}' for f in TEMPLATE_FIELDS)})")
    return text
