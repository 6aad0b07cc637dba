"""Prompts for scene summaries and context-aware merges, and the quality gate for answers.

Two styles:

* ``fewshot`` — for base models without a chat template (the bundled Gemma 3 270M): a
  completion prompt of worked examples (invented names that occur in no novel, so a copied
  example shows up as an invented name) ending in ``Summary:``; the answer is one line.
* ``instruct`` — for chat models and endpoints: an instruction with the limit in words.

A merge prompt (chapter from scenes, part/book from chapters) lists the children in order,
each as its summary between the child's first and last sentences from the source, so the
model can correct and fill what the child summaries dropped (Ou & Lapata 2025, CAHM).

:func:`check_answer` cleans an answer (labels, a sentence cut by the token limit, repeated
sentences, sentences naming people absent from the source when ``ground_names``) and then
rejects it when it is empty, echoes the source or the prompt, or is over the word limit.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ctxfst_tui.core.summary.text import last_sentences, overlap, quoted_share, top_names, ungrounded_names
from ctxfst_tui.core.text.sentences import split_sentences
from ctxfst_tui.core.text.words import count_words, one_line

PROMPT_VERSION = 2

# ---------------------------------------------------------------- examples

SCENE_HEADER = (
    "Plot summaries of scenes from novels. Each summary says who is in the scene and what happens in it "
    "(actions, decisions, deaths, revelations) in two to four plain sentences. It uses only names that "
    "appear in the scene and never invents names.\n###\n"
)

SCENE_EXAMPLES = [
    {
        "before": "The storm had not let up for three days.",
        "scene": "Kael climbed the cold stone steps with his heart pounding. The door of the laboratory was ajar. "
                 "Inside he found the old wizard Erebus lying on the floor, clutching a broken flask. \"The traitor... "
                 "is on the council,\" Erebus whispered, gripping Kael's sleeve. \"Tell no one until you are sure.\" "
                 "Kael tried to revive him with water and salts, but the wizard breathed his last in his arms. "
                 "Outside, the bells of the tower began to ring.",
        "summary": "Kael finds the wizard Erebus dying on the floor of his laboratory. Before he dies in Kael's arms, "
                   "Erebus reveals that a traitor sits on the council and warns Kael to tell no one.",
    },
    {
        "before": "We reached the inn at dusk, too tired to eat.",
        "scene": "I could not sleep that night. Towards two o'clock I heard voices in the yard and went to the window. "
                 "Two men were quarrelling over a letter; the taller one struck the other, who fell against the well "
                 "and did not rise. The tall man took the letter from his coat and rode away. In the morning I went "
                 "to the magistrate, Mr. Oakes, and told him all I had seen, but he only asked me whether I was "
                 "certain I had been awake.",
        "summary": "Unable to sleep at the inn, the narrator sees a tall man kill another in a quarrel over a letter "
                   "and ride away with it. The narrator reports the killing to the magistrate, Mr. Oakes, who doubts "
                   "the story.",
    },
    {
        "before": "The ship had been in harbour since Tuesday.",
        "scene": "\"You cannot mean to sail with him,\" said Ada, standing in the doorway of the counting-house. Her "
                 "father, the merchant Hollis, kept his eyes on the ledger. \"Captain Vane has the only ship that "
                 "will reach Lisbon before the fair. I have no choice.\" \"He lost two cargoes last year, and a man "
                 "besides.\" Hollis closed the book. \"Then you will come with me, and see that he loses nothing "
                 "more.\" Ada stared at him, and then laughed, for she had wanted nothing else for a year.",
        "summary": "Ada begs her father, the merchant Hollis, not to sail to Lisbon with Captain Vane, who lost two "
                   "cargoes and a man the year before. Hollis insists on going and decides that Ada will come too, "
                   "which secretly delights her.",
    },
]

MERGE_HEADER = (
    "{Parent} summaries. A {parent} summary retells the events of the whole {parent} in order from the summaries "
    "of its {child}s, using the first and last lines of each {child} to correct them: who acts, what happens, "
    "deaths and revelations. It uses only names that appear in the {child}s and never invents names.\n###\n"
)

MERGE_EXAMPLE = {
    "title": "The Drowned Key",
    "items": [
        ("Marta waited at the harbour until the last boat came in.",
         "Marta learns from the fisherman Pell that her brother Tomas was lost at sea in the storm. She goes home "
         "and hides the news from her mother.",
         "She lit the lamp in the window, as she did every night."),
        ("The knock came a little after midnight.",
         "A stranger brings Marta a wet coat found on the rocks. She recognises it as her brother's and finds a "
         "key sewn into its lining.",
         "\"Tomas never owned a key in his life,\" she said."),
    ],
    "summary": "Marta learns from the fisherman Pell that her brother Tomas was lost at sea in a storm, and hides "
               "the news from her mother. That night a stranger brings her Tomas's coat, found on the rocks; sewn "
               "into its lining is a key, which puzzles her because Tomas never owned one.",
}

INSTRUCT_SCENE = """Summarize this scene from the novel "{book}" ({where}) in at most {limit} words.
Say who is in the scene and what happens in it: actions, decisions, deaths, revelations. Use only names that appear in the text; do not invent names or events. Write plain prose, no title, headings or lists.
{before}
Scene:
{text}"""

INSTRUCT_MERGE = """Below are the summaries of the {n} {child}s of {where} of the novel "{book}", in order, each between the {child}'s first and last sentences from the original text.
Write one summary of the whole {parent} in at most {limit} words that tells its events in order: who acts, what happens, deaths and revelations. Use the original sentences to correct or complete the {child} summaries. Use only names that appear below; do not invent names. Write plain prose, no title, headings or lists.

{items}"""

TIGHT_NOTE = "\n\nKeep it short: at most {limit} words, in your own words, without copying sentences or dialogue."
LABELS = re.compile(r"(?:^|\s)(?:###|Scene(?: \d+)?(?: begins| ends| summary)?:|Summary:|Before:|Chapter(?: \d+)?(?: begins| ends| summary)?:|"
                    r"Book(?: summary)?:|Part(?: \d+)?(?: summary)?:)", re.IGNORECASE)


@dataclass
class Prompt:
    text: str
    stop: list[str]
    max_tokens: int
    prefix: str = ""  # the start of the answer, written by the prompt
    boilerplate: str = ""  # prompt text that is not the source (echo check)
    style: str = "fewshot"


@dataclass
class MergeItem:
    label: str  # "Scene 2", "Chapter 5"
    summary: str | None
    opening: str
    closing: str


def max_tokens_for(limit_words: int, tokens_per_word: float) -> int:
    return int(limit_words * tokens_per_word) + 16


def _scene_block(before: str, scene: str, summary: str | None) -> str:
    out = f"Before: {before or '(start of the book)'}\nScene: {scene}\nSummary:"
    if summary is not None:
        out += f" {summary}\n###\n"
    return out


_HONORIFIC_NAME = re.compile(r"\b(Mr|Mrs|Ms|Miss|Dr|Sir|Lady|Lord|Captain|Colonel|Madame|Monsieur|Dona|Dom)\.?\s+([A-Z][\w'’-]+)")
_QUOTED = re.compile(r"[“\"«][^”\"»]{0,2000}[”\"»]")


def subject_of(text: str) -> str:
    """Who a summary of ``text`` should start with: "The narrator" for a first-person narrative (``I``
    outside dialogue), else the most frequent name (with its usual title: "Mrs. Bennet"), else ""."""
    narrative = _QUOTED.sub(" ", text)
    words = narrative.split()
    if words and sum(1 for w in words if w.strip("\"“”'.,;:!?") in ("I", "me", "my")) / len(words) > 0.02:
        return "The narrator"
    names = top_names(text, 1, min_count=2)
    if not names:
        return ""
    name = names[0]
    titled: dict[str, int] = {}
    for m in _HONORIFIC_NAME.finditer(text):
        if m.group(2) == name:
            key = f"{m.group(1)}. {name}" if m.group(1) in ("Mr", "Mrs", "Ms", "Dr") else f"{m.group(1)} {name}"
            titled[key] = titled.get(key, 0) + 1
    total = len(re.findall(r"\b" + re.escape(name) + r"\b", text))
    if titled:
        best, n = max(titled.items(), key=lambda kv: kv[1])
        if n * 2 >= total:
            return best
    return name


def scene_prompt(text: str, before: str, *, limit: int, style: str, tokens_per_word: float, tight: bool = False,
                 book: str = "", where: str = "", subject: bool = True) -> Prompt:
    max_tokens = max_tokens_for(limit, tokens_per_word)
    if style == "instruct":
        before_part = f"\nThe previous scene ends: \"{before}\"\n" if before else "\n"
        body = INSTRUCT_SCENE.format(book=book or "untitled", where=where or "a scene", limit=limit,
                                     before=before_part, text=text.strip())
        if tight:
            body += TIGHT_NOTE.format(limit=max(20, limit * 2 // 3))
        boiler = INSTRUCT_SCENE.format(book="", where="", limit=limit, before="", text="")
        return Prompt(body, [], max_tokens, "", boiler, "instruct")
    examples = SCENE_EXAMPLES[:1] if tight else SCENE_EXAMPLES
    shots = "".join(_scene_block(ex["before"], ex["scene"], ex["summary"]) for ex in examples)
    header = SCENE_HEADER if not tight else SCENE_HEADER.replace("two to four", "two")
    prompt = header + shots + _scene_block(one_line(before), one_line(text), None)
    prefix = subject_of(text) if subject else ""
    if prefix:
        prompt += " " + prefix
    boiler = SCENE_HEADER + "".join(ex["summary"] + "\n" + ex["scene"] + "\n" + ex["before"] + "\n" for ex in SCENE_EXAMPLES)
    return Prompt(prompt, ["\n", "###"], max_tokens if not tight else max(48, max_tokens * 3 // 4), prefix, boiler)


def _items_block(items: list[MergeItem], child: str) -> str:
    lines = []
    for it in items:
        lab = it.label
        if it.opening:
            lines.append(f"{lab} begins: {one_line(it.opening)}")
        if it.summary:
            lines.append(f"{lab} summary: {one_line(it.summary)}")
        if it.closing:
            lines.append(f"{lab} ends: {one_line(it.closing)}")
    return "\n".join(lines)


def merge_prompt(items: list[MergeItem], *, parent: str, child: str, title: str, limit: int, style: str,
                 tokens_per_word: float, tight: bool = False, book: str = "", subject: str = "") -> Prompt:
    """Prompt to merge ``items`` (children summaries with source extracts) into a ``parent`` summary."""
    max_tokens = max_tokens_for(limit, tokens_per_word)
    Parent = parent[:1].upper() + parent[1:]
    if style == "instruct":
        blocks = []
        for it in items:
            blocks.append(f"{it.label}\nFirst sentence: {one_line(it.opening)}\n"
                          f"Summary: {one_line(it.summary) if it.summary else '(not available)'}\n"
                          f"Last sentence: {one_line(it.closing)}")
        body = INSTRUCT_MERGE.format(n=len(items), child=child, parent=parent, where=title or f"the {parent}",
                                     book=book or "untitled", limit=limit, items="\n\n".join(blocks))
        if tight:
            body += TIGHT_NOTE.format(limit=max(40, limit * 2 // 3))
        boiler = INSTRUCT_MERGE.format(n="", child=child, parent=parent, where="", book="", limit=limit, items="")
        return Prompt(body, [], max_tokens, "", boiler, "instruct")
    Child = child[:1].upper() + child[1:]
    header = MERGE_HEADER.format(Parent=Parent, parent=parent, child=child)
    ex_items = [MergeItem(f"{Child} {i}", s, o, c) for i, (o, s, c) in enumerate(MERGE_EXAMPLE["items"], 1)]
    if tight:
        # the retry: summaries only (no source lines to copy), and a reminder to cover every child
        header = (f"{Parent} summaries. A {parent} summary joins the summaries of all its {child}s into two or three "
                  f"sentences that cover every {child}, in order, using only names that appear in them.\n###\n")
        ex_items = [MergeItem(i.label, i.summary, "", "") for i in ex_items]
        items = [MergeItem(i.label, i.summary or f"({i.opening} ... {i.closing})", "", "") for i in items]
    shot = (f"{Parent}: {MERGE_EXAMPLE['title']}\n{_items_block(ex_items, child)}\n"
            f"{Parent} summary: {MERGE_EXAMPLE['summary']}\n###\n")
    prompt = header + shot + f"{Parent}: {title}\n{_items_block(items, child)}\n{Parent} summary:"
    if subject:
        prompt += " " + subject
    boiler = header + MERGE_EXAMPLE["summary"] + "\n" + "\n".join(" ".join(t) for t in MERGE_EXAMPLE["items"])
    return Prompt(prompt, ["\n", "###"], max_tokens if not tight else max(64, max_tokens * 3 // 4), subject, boiler)


# ---------------------------------------------------------------- the quality gate


@dataclass
class Verdict:
    text: str  # the cleaned answer
    reason: str = ""  # why it is rejected ("" = accepted)
    category: str = ""  # empty | echo | prompt | over_limit | invented
    dropped: list[str] = field(default_factory=list)  # sentences removed for naming people absent from the source
    trimmed: str = ""  # the answer cut to the limit (for an over-limit answer kept after the retry)

    @property
    def ok(self) -> bool:
        return not self.reason


def clean_answer(raw: str, prefix: str = "", finish_reason: str = "stop") -> str:
    if prefix:
        text = prefix + ("" if re.match(r"[\s'’,.;:!?)]", raw or " ") else " ") + raw
    else:
        text = raw
    text = text.replace("\r", "")
    m = LABELS.search(text[1:]) if text else None  # a new block started: cut there (a leading label is kept below)
    if m:
        text = text[: m.start() + 1]
    text = re.sub(r"^\s*(?:Summary|Chapter summary|Book summary|Part summary|Scene summary)\s*:\s*", "", text, flags=re.I)
    text = one_line(text).strip(" -*#")
    sentences = split_sentences(text)
    if finish_reason == "length" and len(sentences) > 1 and not re.search(r"[.!?…][\"'”’)\]]*$", sentences[-1]):
        sentences = sentences[:-1]
    seen: set[str] = set()
    kept = []
    for s in sentences:
        key = re.sub(r"\W+", " ", s.casefold()).strip()
        if key in seen:
            break  # the model started to loop
        seen.add(key)
        kept.append(s)
    return " ".join(kept).strip()


def trim_to_words(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` words at a sentence boundary (at a word if one sentence is longer)."""
    if count_words(text) <= limit:
        return text
    out: list[str] = []
    n = 0
    for s in split_sentences(text):
        w = count_words(s)
        if n + w > limit:
            break
        out.append(s)
        n += w
    if out:
        return " ".join(out)
    return " ".join(text.split()[:limit]) + " ..."


def check_answer(raw: str, *, prompt: Prompt, source: str, echo_reference: str, limit: int,
                 finish_reason: str = "stop", ground_names: bool = True, source_vocab: set[str] | None = None,
                 echo_threshold: float = 0.6, known: tuple[str, ...] | list[str] = (),
                 children: list[str] | None = None) -> Verdict:
    """Clean ``raw`` and judge it. ``source``: all the text the node stands for (names must occur in it);
    ``echo_reference``: the source text shown in the prompt (copying it is an echo)."""
    text = clean_answer(raw, prompt.prefix, finish_reason)
    dropped: list[str] = []
    if ground_names and text:
        kept = []
        for s in split_sentences(text):
            if ungrounded_names(s, source, source_vocab, known):
                dropped.append(s)
            else:
                kept.append(s)
        text = " ".join(kept)
        if not text and dropped:
            return Verdict("", f"invents names ({', '.join(sorted(set(n for s in dropped for n in ungrounded_names(s, source, source_vocab, known))))[:80]})",
                           "invented", dropped)
    if not text or count_words(text) < 3:
        return Verdict(text, "empty answer", "empty", dropped)
    if prompt.boilerplate and overlap(text, prompt.boilerplate, 5) >= 0.3:
        return Verdict(text, "echoes the prompt's examples or instructions", "prompt", dropped)
    if re.search(r"\b(?:Before|Scene \d+ (?:begins|ends)|Chapter \d+ (?:begins|ends))\s*:", text):
        return Verdict(text, "echoes the prompt's labels", "prompt", dropped)
    if overlap(text, echo_reference, 6) >= echo_threshold:
        return Verdict(text, "echoes the source text", "echo", dropped)
    if children and len([c for c in children if c]) >= 2:
        for c in children:
            if c and overlap(text, c, 5) >= 0.8:
                return Verdict(text, "copies one child summary instead of merging", "echo", dropped)
    if quoted_share(text) >= 0.35:
        return Verdict(text, "continues the source's dialogue instead of summarizing", "echo", dropped)
    n = count_words(text)
    if n > limit:
        return Verdict(text, f"over the limit ({n} > {limit} words)", "over_limit", dropped, trim_to_words(text, limit))
    return Verdict(text, "", "", dropped)


def joined_summaries(summaries: list[str], limit: int) -> str:
    """A merge without the model: the first sentence of each summary in order, then the second ones..., to ``limit`` words."""
    sents = [split_sentences(s) for s in summaries if s]
    chosen: list[set[int]] = [set() for _ in sents]
    used = 0
    for rank in range(max((len(x) for x in sents), default=0)):
        for i, ss in enumerate(sents):
            if rank < len(ss):
                w = count_words(ss[rank])
                if used + w > limit:
                    continue
                chosen[i].add(rank)
                used += w
    parts = [ss[r] for i, ss in enumerate(sents) for r in sorted(chosen[i])]
    return " ".join(parts)


def context_before(prev_text: str, n: int) -> str:
    return last_sentences(prev_text, n) if prev_text and n > 0 else ""
