"""Segmentation: a manuscript (``.txt`` or ``.md``) becomes a tree of parts, chapters and scenes.

1. **Boilerplate.** Project Gutenberg's header (up to ``*** START OF ... ***`` and the
   "Produced by" credits after it) and footer (from "End of the Project Gutenberg EBook"
   / ``*** END OF ... ***`` on, licence included) are cut, as is a Markdown YAML front
   matter block. Their ``***`` are never scene breaks.
2. **Headings.** Parts (``BOOK ONE: 1805``, ``PART II``, ``Parte 2``, ``Livro I``, ``VOLUME III``,
   ``BOOK THE FIRST--Recalled to Life``, ``PRIMEIRA PARTE``) and the frame of the story (``PROLOGUE``,
   ``INTERLUDE``, ``EPILOGUE. 1813-1820``, ``FIRST EPILOGUE``, ``Epílogo``) are parts; chapters are
   ``Chapter 12``, ``CHAPTER IV.``, ``CHAPTER 1. Loomings.``, ``# Capítulo 3``, ``Letter 2``, ``Carta 4``
   (numbers in digits, roman numerals or words, English and Portuguese). A heading stands alone on a
   line (with ``#`` marks or not); a short title line right under one belongs to it, and so does a
   line in capitals a blank line under a part or a bare numeral (``PRIMEIRA PARTE`` / ``OS AVENTUREIROS``).
   Without keyword chapters a ``.md`` file's own headings are used, else bare numerals (``IV.``)
   alone on a line. A part holds the chapters up to the next part; a prologue or interlude only
   in a book divided into parts (in a book of chapters alone it is a part of its own text), an
   epilogue always. A prologue, interlude or epilogue right under a part heading, or a Markdown
   heading deeper than the parts, is a chapter of that part.
3. **Contents are not chapters.** A heading followed by fewer than ``min_chapter_words``
   words before the next heading is an entry of a table of contents (Frankenstein lists
   all its letters and chapters first); its text stays in the front matter. So is a part listed
   before the first chapter whose title comes again later, and a part heading above a contents
   line that precedes every chapter (``TOMO PRIMEIRO`` on a title page over ``INDICE``).
4. **Scenes.** A chapter is cut at its author's scene markers (``***``, ``* * *``,
   ``* * * * *``, ``#``, ``~``, ``---`` alone on a line); a marked piece longer than
   ``max_scene_words`` (1,000), or a marker-less chapter longer than ``split_words`` (600),
   is split into paragraph groups of about
   ``target_scene_words`` (400; groups stay within 200–1,000 words by default) by a small dynamic programme that
   only cuts between paragraphs and avoids cutting inside a multi-paragraph speech; a
   single paragraph longer than that is cut between sentences. Scenes under
   ``tiny_scene_words`` merge with their smaller neighbour.
5. **Every word in exactly one scene.** Scene spans tile the text of their chapter; what is
   not in a scene is a heading, a marker (no words) or stripped boilerplate.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from ctxfst_tui.core.summary.text import open_quote_after, quote_balance, sha
from ctxfst_tui.core.text.sentences import sentence_spans, trimmed_spans
from ctxfst_tui.core.text.words import count_words
from ctxfst_tui.core.summary.tree import Manuscript, Node

# ---------------------------------------------------------------- settings


@dataclass
class SegmentSettings:
    min_scene_words: int = 200  # paragraph groups aim at least this long
    max_scene_words: int = 1000  # longer pieces are split at paragraph boundaries
    target_scene_words: int = 400  # the size paragraph groups aim for (small models do better on short scenes)
    split_words: int = 600  # a chapter without scene markers longer than this becomes paragraph groups
    tiny_scene_words: int = 100  # shorter scenes merge with a neighbour
    min_chapter_words: int = 20  # a heading followed by fewer words is a contents entry

    def to_json(self) -> dict[str, int]:
        return dict(self.__dict__)


class SegmentError(ValueError):
    """The manuscript cannot be read; the message is one line."""


# ---------------------------------------------------------------- reading


def read_manuscript_text(path: str | Path) -> str:
    """The manuscript's text: UTF-8 (BOM dropped) or, failing that, cp1252; line ends normalized to ``\\n``."""
    from ctxfst_tui.core.workspace.files import NotRegularFile, read_regular

    p = Path(path)
    try:
        data = read_regular(p)  # a named pipe or device is refused, never opened (it would block)
    except NotRegularFile as exc:
        what = exc.reason if exc.reason == "no such file" else f"{exc.reason}, not a manuscript"
        raise SegmentError(f"{p}: {what}") from None
    except OSError as exc:
        raise SegmentError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if b"\x00" in data[:4096]:
        raise SegmentError(f"{p}: not a text file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("cp1252", errors="replace")
    return normalize(text)


def normalize(text: str) -> str:
    text = text.lstrip("\ufeff")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def load_manuscript(path: str | Path, settings: SegmentSettings | None = None) -> Manuscript:
    p = Path(path)
    text = read_manuscript_text(p)
    return segment(text, path=p, settings=settings)


# ---------------------------------------------------------------- boilerplate

_GB_START = re.compile(r"^[ \t]*\*{3}[ \t]*START OF (?:THE |THIS )?PROJECT GUTENBERG[^\n]*$", re.I | re.M)
_GB_END = re.compile(r"^[ \t]*\*{3}[ \t]*END OF (?:THE |THIS )?PROJECT GUTENBERG[^\n]*$", re.I | re.M)
_GB_END_LINE = re.compile(r"^[ \t]*End of (?:the |this )?Project Gutenberg", re.I | re.M)
_GB_SMALL_PRINT = re.compile(r"^[ \t]*\*END\*[ \t]*THE SMALL PRINT[^\n]*$", re.I | re.M)
_GB_LICENSE = re.compile(r"^[ \t]*\*{3}[ \t]*START: FULL LICENSE", re.I | re.M)
_CREDITS = re.compile(
    r"^[ \t]*(?:Produced by|E-?text prepared by|Transcribed (?:from|by)|This e-?book was produced by|"
    r"Updated editions will replace|HTML version by)", re.I)
_TITLE_LINE = re.compile(r"^[ \t]*Title:[ \t]*(.+)$", re.M)
_YAML = re.compile(r"\A---[ \t]*\n(.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)


def _paragraph_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of the blank-line separated paragraphs of ``text[start:end]``, trimmed."""
    spans = []
    pos = start
    for m in re.finditer(r"\n[ \t]*\n", text[start:end]):
        spans.append((pos, start + m.start()))
        pos = start + m.end()
    spans.append((pos, end))
    return trimmed_spans(text, spans)


def strip_boilerplate(text: str) -> tuple[tuple[int, int], list[tuple[int, int, str]], str]:
    """(body span, removed regions, title found in the header) of a manuscript."""
    removed: list[tuple[int, int, str]] = []
    start, end = 0, len(text)
    title = ""
    m = _YAML.match(text)
    if m:
        tm = re.search(r"^title:[ \t]*[\"']?(.+?)[\"']?[ \t]*$", m.group(1), re.M)
        if tm:
            title = tm.group(1).strip()
        start = m.end()
        removed.append((0, start, "front matter block"))
    m = _GB_START.search(text, start)
    sp = _GB_SMALL_PRINT.search(text, start) if m is None else None
    head_end = m.end() if m else (sp.end() if sp else None)
    if head_end is not None:
        tm = _TITLE_LINE.search(text, start, head_end)
        if tm:
            title = tm.group(1).strip()
        removed.append((start, head_end, "Project Gutenberg header"))
        start = head_end
        # credits paragraphs right after the START line
        for a, b in _paragraph_spans(text, start, min(len(text), start + 3000))[:4]:
            if _CREDITS.match(text[a:b]):
                removed.append((start, b, "Project Gutenberg credits"))
                start = b
            else:
                break
    m = _GB_END.search(text, start)
    foot = m.start() if m else None
    line = None
    for lm in _GB_END_LINE.finditer(text, start):
        if foot is None or lm.start() <= foot:
            line = lm
    if line is not None and (foot is None or foot - line.start() < 1500):
        foot = line.start()
    if foot is None:
        lm = _GB_LICENSE.search(text, start)
        foot = lm.start() if lm else None
    if foot is not None:
        removed.append((foot, len(text), "Project Gutenberg footer and licence"))
        end = foot
    # merge adjacent removed regions
    removed.sort()
    merged: list[tuple[int, int, str]] = []
    for a, b, why in removed:
        if merged and a <= merged[-1][1]:
            pa, pb, pw = merged[-1]
            merged[-1] = (pa, max(pb, b), pw if pw == why else f"{pw}; {why}")
        else:
            merged.append((a, b, why))
    return (start, max(start, end)), merged, title


# ---------------------------------------------------------------- headings

_EN_NUM = ("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
           "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred first second "
           "third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth fifteenth "
           "sixteenth seventeenth eighteenth nineteenth twentieth thirtieth fortieth fiftieth last final").split()
_PT_NUM = ("um uma dois duas três tres quatro cinco seis sete oito nove dez onze doze treze catorze quatorze quinze "
           "dezesseis dezasseis dezessete dezassete dezoito dezenove dezanove vinte trinta quarenta cinquenta "
           "sessenta setenta oitenta noventa cem primeiro primeira segundo segunda terceiro terceira quarto quarta "
           "quinto quinta sexto sexta sétimo sétima setimo oitavo oitava nono nona décimo décima decimo último "
           "última ultimo").split()
_NUMWORD = "(?:" + "|".join(sorted(set(_EN_NUM + _PT_NUM), key=len, reverse=True)) + ")"
NUMBER = rf"(?:\d{{1,4}}|[IVXLCDM]{{1,8}}|{_NUMWORD}(?:(?:[- ]|\s+e\s+){_NUMWORD}){{0,2}})"
_SEP_REST = r"(?:\s*(?:[.:;—–-]+|\s)\s*(?P<rest>.*?))?"
_PUNCT_REST = r"(?:\s*[.:;—–-]+\s*(?P<rest>.*?))?"  # a title after punctuation only ("BOOK THE FIRST--Recalled to Life")
_ORDINAL = ("(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|last|final|"
            "primeiro|primeira|segundo|segunda|terceiro|terceira|quarto|quarta|quinto|quinta|sexto|sexta|sétimo|"
            "sétima|setimo|setima|oitavo|oitava|nono|nona|décimo|décima|decimo|decima|último|última|ultimo|ultima)")
_DIVISION = r"(?:part|book|volume|vol\.|parte|livro|tomo)"
_FRAME = r"(?:prologue|epilogue|interlude|prólogo|prologo|epílogo|epilogo|interlúdio|interludio)"
CHAPTER_RE = re.compile(
    rf"^(?P<key>chapter|chap\.|capítulo|capitulo|cap\.|letter|carta)\s+(?P<num>{NUMBER})\b\.?{_SEP_REST}\s*$", re.I)
# a prologue, interlude or epilogue, also numbered ("FIRST EPILOGUE: 1813 - 20", "Interlude II", "EPÍLOGO")
FRAME_RE = re.compile(
    rf"^(?:{_ORDINAL}\s+)?(?P<key>{_FRAME})(?:\s+(?:{NUMBER}))?\b\.?{_PUNCT_REST}\s*$", re.I)
# a division of the book: "PART II", "Livro I", "BOOK THE FIRST", "Book the Second--the Golden Thread", "PRIMEIRA PARTE"
PART_RE = re.compile(
    rf"^(?P<key>{_DIVISION})\s+(?P<num>{NUMBER})\b\.?{_SEP_REST}\s*$", re.I)
PART_THE_RE = re.compile(rf"^(?P<key>{_DIVISION})\s+the\s+(?P<num>{_ORDINAL}|{NUMBER})\b\.?{_PUNCT_REST}\s*$", re.I)
PART_ORDINAL_RE = re.compile(rf"^(?P<num>{_ORDINAL})\s+(?P<key>{_DIVISION})\b\.?{_PUNCT_REST}\s*$", re.I)
_HEADING_RES = (("chapter", "", CHAPTER_RE), ("part", "frame", FRAME_RE), ("part", "division", PART_RE),
                ("part", "division", PART_THE_RE), ("part", "division", PART_ORDINAL_RE))
BARE_RE = re.compile(r"^(?:[IVXLCDM]{1,8}|\d{1,3})\.?$")
MD_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
SCENE_MARKER = re.compile(r"^[ \t]*(?:(?:\*[ \t]*){3,}|#|~+|(?:~[ \t]*){3,}|-{3,}|(?:-[ \t]*){3,}|⁂|§|(?:•[ \t]*){3,})[ \t]*$")
_CONTENTS_LINE = re.compile(r"^[ \t]*(?:table of )?(?:contents|índice|indice|sumário|sumario)\.?[ \t]*$", re.I | re.M)


@dataclass
class _Candidate:
    kind: str  # chapter | part | bare | md
    start: int  # heading span
    end: int
    title: str
    level: int = 0  # markdown level
    keyword: bool = True
    role: str = ""  # of a part: "division" (BOOK, PART, VOLUME) or "frame" (PROLOGUE, INTERLUDE, EPILOGUE)
    key: str = ""  # the heading's keyword, lower case ("epilogue", "book")


def _lines(text: str, start: int, end: int) -> list[tuple[int, int, str]]:
    out = []
    pos = start
    while pos < end:
        nl = text.find("\n", pos, end)
        stop = end if nl < 0 else nl
        out.append((pos, stop, text[pos:stop]))
        pos = stop + 1
    return out


def _rest_ok(rest: str | None) -> bool:
    if not rest:
        return True
    return len(rest.split()) <= 14 and len(rest) <= 120


def _classify(line: str) -> tuple[str, str, int, str, str] | None:
    """(kind, title, md level, part role, keyword) when ``line`` is a heading candidate."""
    raw = line.strip()
    if not raw or len(raw) > 140:
        return None
    level = 0
    md = MD_HEADING.match(raw)
    body = raw
    if md:
        level = len(md.group(1))
        body = md.group(2).strip()
    body_clean = body.strip("*_ ").strip()
    for kind, role, rx in _HEADING_RES:
        m = rx.match(body_clean)
        if m and body_clean[:1].isupper() and _rest_ok(m.group("rest")):
            return kind, body_clean, level, role, m.group("key").lower()
    if md:
        return "md", body_clean, level, "", ""
    if BARE_RE.match(body_clean):
        return "bare", body_clean, 0, "", ""
    return None


def _is_subtitle(line: str) -> bool:
    s = line.strip()
    if not s or SCENE_MARKER.match(line) or len(s) > 80 or len(s.split()) > 10:
        return False
    if _classify(s) is not None:
        return False
    return s[:1].isupper() or s[:1] in "\"'“‘_*"


def _caps_title(line: str) -> bool:
    """A short line in capitals: the title printed a blank line under a part or a bare numeral ("OS AVENTUREIROS")."""
    s = line.strip()
    if (not s or len(s) > 60 or len(s.split()) > 8 or SCENE_MARKER.match(line) or _classify(s) is not None
            or _CONTENTS_LINE.match(s)):
        return False
    return any(ch.isalpha() for ch in s) and s == s.upper() and s[-1:] not in ",;!?"


def _candidates(text: str, start: int, end: int) -> list[_Candidate]:
    lines = _lines(text, start, end)
    out: list[_Candidate] = []
    n = len(lines)
    i = 0
    while i < n:
        a, b, line = lines[i]
        c = _classify(line)
        if c is None:
            i += 1
            continue
        kind, title, level, role, key = c
        prev_blank = i == 0 or not lines[i - 1][2].strip() or (out and out[-1].end >= lines[i - 1][0])
        if level == 0 and not prev_blank:
            i += 1
            continue
        next_blank = i + 1 >= n or not lines[i + 1][2].strip() or _classify(lines[i + 1][2]) is not None
        span_end = b
        if level == 0 and not next_blank:
            # a short title line right under the heading ("CHAPTER I." / "Down the Rabbit-Hole")
            if kind in ("chapter", "part") and _is_subtitle(lines[i + 1][2]) and (i + 2 >= n or not lines[i + 2][2].strip()):
                title = f"{title} {lines[i + 1][2].strip()}"
                span_end = lines[i + 1][1]
                i += 1
            else:
                i += 1
                continue
        elif level == 0 and kind in ("part", "bare"):
            # a title in capitals alone a blank line or more below ("PRIMEIRA PARTE" ... "OS AVENTUREIROS")
            j = i + 1
            while j < n and not lines[j][2].strip():
                j += 1
            if j < n and _caps_title(lines[j][2]) and (j + 1 >= n or not lines[j + 1][2].strip()):
                sep = " " if title[-1:] in ".:—–-" else " — "
                title = f"{title}{sep}{lines[j][2].strip()}"
                span_end = lines[j][1]
                i = j
        out.append(_Candidate(kind, a, span_end, title, level, kind in ("chapter", "part"), role, key))
        i += 1
    return out


def _choose_headings(text: str, cands: list[_Candidate], body_start: int, body_end: int,
                     settings: SegmentSettings) -> list[_Candidate]:
    keyword = [c for c in cands if c.kind in ("chapter", "part")]
    md = [c for c in cands if c.kind == "md"]
    bare = [c for c in cands if c.kind == "bare"]
    frames = [c for c in keyword if c.role == "frame"]
    if any(c.kind == "chapter" for c in keyword):
        chosen = keyword
    elif len(frames) < len(keyword):  # divisions without keyword chapters: markdown headings or numerals under them
        under = [_as(c, "chapter") for c in md if all(c.level > k.level for k in keyword if k.level)]
        chosen = keyword + (under or ([_as(c, "chapter") for c in bare] if len(bare) >= 2 else []))
    elif md:  # a prologue or epilogue at most: the markdown headings are the chapters (and parts)
        chosen = frames + _md_levels(text, md)
    elif len(bare) >= 3:
        chosen = frames + [_as(c, "chapter") for c in bare]
    else:
        chosen = frames
    chosen.sort(key=lambda c: c.start)
    # contents entries: a chapter heading with (almost) no words before the next heading
    words_after = []
    for i, c in enumerate(chosen):
        nxt = chosen[i + 1].start if i + 1 < len(chosen) else body_end
        words_after.append(count_words(text[c.end:nxt]))
    real_chapter = [c.kind == "chapter" and w >= settings.min_chapter_words for c, w in zip(chosen, words_after)]
    first_real = next((c.start for c, r in zip(chosen, real_chapter) if r), body_end)
    keep: list[_Candidate] = []
    for i, c in enumerate(chosen):
        if c.kind == "chapter":
            if real_chapter[i]:
                keep.append(c)
            continue
        if words_after[i] < settings.min_chapter_words and c.start < first_real and any(
                d.kind == "part" and _same_title(d.title, c.title) for d in chosen[i + 1:]):
            continue  # an entry of the contents ("EPILOGUE" listed last, just before the first chapter)
        # a part is real when its own text is long enough or the next heading that is a part
        # or a real chapter is a real chapter
        if words_after[i] >= settings.min_chapter_words:
            keep.append(c)
            continue
        for j in range(i + 1, len(chosen)):
            if chosen[j].kind == "part":
                if (j == i + 1 and c.role != "frame" and chosen[j].role == "frame"
                        and words_after[j] >= settings.min_chapter_words):
                    keep.append(c)  # "PART ONE" / "PROLOGUE": the prologue is its first chapter
                break
            if real_chapter[j]:
                keep.append(c)
                break
    # a part heading above a table of contents that comes before every chapter and before another part
    # is on the title page ("TOMO PRIMEIRO" over "INDICE" over "PRIMEIRA PARTE"); a volume's own
    # contents ("VOLUME I" / "CONTENTS" / "CHAPTER I") leaves its volume a part
    first_real = next((c.start for c in keep if c.kind == "chapter"), body_end)
    toc = [m.start() for m in _CONTENTS_LINE.finditer(text, body_start, first_real)]
    if toc and any(toc[-1] < c.start < first_real for c in keep if c.kind == "part"):
        keep = [c for c in keep if c.start > toc[-1]]
    return _frames_inside_divisions(keep)


def _same_title(a: str, b: str) -> bool:
    return re.sub(r"[\W_]+", " ", a).strip().casefold() == re.sub(r"[\W_]+", " ", b).strip().casefold()


def _frames_inside_divisions(headings: list[_Candidate]) -> list[_Candidate]:
    """A prologue, interlude or epilogue inside a part is one of its chapters.

    It is inside when it comes right after the part's heading ("PART ONE" / "PROLOGUE" / "CHAPTER 1"),
    or when it is a Markdown heading deeper than the part headings ("# Part One" / "## Interlude").
    """
    division_levels = [c.level for c in headings if c.kind == "part" and c.role != "frame" and c.level]
    out: list[_Candidate] = []
    for c in headings:
        if c.role == "frame":
            after_division = bool(out) and out[-1].kind == "part" and out[-1].role != "frame"
            deeper = bool(c.level) and bool(division_levels) and c.level > min(division_levels)
            if after_division or deeper:
                c = _Candidate("chapter", c.start, c.end, c.title, c.level, True, "", c.key)
        out.append(c)
    return out


def _as(c: _Candidate, kind: str) -> _Candidate:
    return _Candidate(kind, c.start, c.end, c.title, c.level, False)


def _md_levels(text: str, md: list[_Candidate]) -> list[_Candidate]:
    levels = sorted({c.level for c in md})
    # a single top-level heading at the very start is the book's title
    top = [c for c in md if c.level == levels[0]]
    if len(top) == 1 and len(levels) > 1 and not text[: top[0].start].strip():
        md = [c for c in md if c is not top[0]]
        levels = levels[1:]
    if not levels:
        return []
    if len(levels) == 1:
        return [_as(c, "chapter") for c in md]
    part_level, chapter_level = levels[0], levels[1]
    return [_as(c, "part" if c.level == part_level else "chapter") for c in md if c.level in (part_level, chapter_level)]


# ---------------------------------------------------------------- scenes


@dataclass
class _Unit:
    start: int
    end: int
    words: int
    penalty_after: float  # cost of a scene boundary after this unit


def _units(text: str, start: int, end: int, settings: SegmentSettings) -> list[list[_Unit]]:
    """Paragraph units of ``text[start:end]`` grouped into marker-delimited pieces."""
    pieces: list[list[_Unit]] = [[]]
    for a, b in _paragraph_spans(text, start, end):
        # a marker line inside a paragraph block (no blank lines around it) also separates
        sub_start = a
        for la, lb, line in _lines(text, a, b):
            if SCENE_MARKER.match(line):
                if sub_start < la:
                    _add_paragraph(text, sub_start, la, pieces[-1], settings)
                if pieces[-1]:
                    pieces.append([])
                sub_start = lb + 1
        if sub_start < b:
            _add_paragraph(text, sub_start, b, pieces[-1], settings)
    return [p for p in pieces if p]


def _add_paragraph(text: str, a: int, b: int, out: list[_Unit], settings: SegmentSettings) -> None:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    if a >= b:
        return
    para = text[a:b]
    w = count_words(para)
    if w == 0:  # decoration without words: attach to the previous unit (or keep as its own)
        if out:
            out[-1].end = b
            return
    if w <= settings.max_scene_words:
        out.append(_Unit(a, b, w, 3.0 if open_quote_after(para) else 0.0))
        return
    # a paragraph longer than a scene: its sentences are units (cuts inside it cost more)
    spans = sentence_spans(text, a, b)
    depth = 0
    for i, (sa, sb) in enumerate(spans):
        s = text[sa:sb]
        depth = quote_balance(text[a:sb])
        last = i == len(spans) - 1
        pen = (3.0 if open_quote_after(para) else 0.0) if last else (6.0 if depth else 1.0)
        out.append(_Unit(sa, sb, count_words(s), pen))


def _group(units: list[_Unit], settings: SegmentSettings, split_above: int) -> list[list[_Unit]]:
    """Cut a piece into scenes: minimal cost partition at unit boundaries."""
    total = sum(u.words for u in units)
    if total <= split_above or len(units) <= 1:
        return [units]
    n_min = math.ceil(total / settings.max_scene_words)
    target = max(settings.min_scene_words, min(settings.max_scene_words, total / max(n_min, round(total / settings.target_scene_words))))
    n = len(units)
    prefix = [0]
    for u in units:
        prefix.append(prefix[-1] + u.words)
    INF = float("inf")
    best = [INF] * (n + 1)
    back = [0] * (n + 1)
    best[0] = 0.0
    for i in range(1, n + 1):
        for j in range(i - 1, -1, -1):
            w = prefix[i] - prefix[j]
            if w > 2 * settings.max_scene_words and i - j > 1:
                break
            if best[j] == INF:
                continue
            cost = ((w - target) / target) ** 2
            if w > settings.max_scene_words and i - j > 1:
                cost += 50.0 * (w - settings.max_scene_words) / settings.max_scene_words + 5.0
            if w < settings.min_scene_words:
                cost += 2.0 + (settings.min_scene_words - w) / settings.min_scene_words
            if i < n:
                cost += units[i - 1].penalty_after
            total_cost = best[j] + cost
            if total_cost < best[i]:
                best[i] = total_cost
                back[i] = j
    cuts = []
    i = n
    while i > 0:
        cuts.append((back[i], i))
        i = back[i]
    cuts.reverse()
    return [units[a:b] for a, b in cuts]


def _merge_tiny(groups: list[list[_Unit]], settings: SegmentSettings) -> list[list[_Unit]]:
    groups = [g for g in groups if g]
    while len(groups) > 1:
        sizes = [sum(u.words for u in g) for g in groups]
        tiny = [i for i, s in enumerate(sizes) if s < settings.tiny_scene_words]
        if not tiny:
            break
        i = min(tiny, key=lambda k: sizes[k])
        if i == 0:
            j = 1
        elif i == len(groups) - 1:
            j = i - 1
        else:
            j = i - 1 if sizes[i - 1] <= sizes[i + 1] else i + 1
        a, b = min(i, j), max(i, j)
        groups[a:b + 1] = [groups[a] + groups[b]]
    return groups


def scene_spans(text: str, start: int, end: int, settings: SegmentSettings) -> list[tuple[int, int, int]]:
    """(start, end, words) of the scenes of ``text[start:end]``."""
    groups: list[list[_Unit]] = []
    pieces = _units(text, start, end, settings)
    # the author's scenes are kept up to max_scene_words; a marker-less chapter is grouped above split_words
    split_above = settings.max_scene_words if len(pieces) > 1 else min(settings.split_words, settings.max_scene_words)
    for piece in pieces:
        groups.extend(_group(piece, settings, split_above))
    groups = _merge_tiny(groups, settings)
    return [(g[0].start, g[-1].end, sum(u.words for u in g)) for g in groups if g]


# ---------------------------------------------------------------- the tree


def _is_front_matter(text: str) -> bool:
    words = count_words(text)
    if words == 0:
        return True
    if _CONTENTS_LINE.search(text) and words <= 3000:
        return True
    if words <= 150:
        paras = [count_words(text[a:b]) for a, b in _paragraph_spans(text, 0, len(text))]
        return max(paras, default=0) < 30
    return False


def _heading_title(c: _Candidate) -> str:
    t = c.title.strip()
    return re.sub(r"\s+", " ", t)


def segment(text: str, *, path: str | Path | None = None, title: str | None = None,
            settings: SegmentSettings | None = None) -> Manuscript:
    """Segment normalized manuscript ``text`` (see :func:`normalize`) into a :class:`Manuscript`."""
    settings = settings or SegmentSettings()
    text = normalize(text)
    (b0, b1), removed, gb_title = strip_boilerplate(text)
    cands = _candidates(text, b0, b1)
    headings = _choose_headings(text, cands, b0, b1, settings)
    p = Path(path) if path is not None else None

    root = Node("book", "", b0, b1, id="book")
    book_title = title or gb_title

    def add_scenes(parent: Node, a: int, b: int, prefix: str) -> None:
        spans = scene_spans(text, a, b, settings)
        for k, (sa, sb, w) in enumerate(spans, 1):
            parent.children.append(Node("scene", f"Scene {k}", sa, sb, w, id=f"{prefix}s{k}"))

    # preamble: before the first heading
    first = headings[0].start if headings else b1
    pre_text = text[b0:first]
    if count_words(pre_text):
        if headings and _is_front_matter(pre_text):
            paras = _paragraph_spans(text, b0, first)
            fa, fb = paras[0][0], paras[-1][1]
            root.children.append(Node("scene", "Front matter", fa, fb, count_words(pre_text), id="front", front_matter=True))
            if not book_title:
                book_title = _first_line(text[fa:fb])
        else:
            add_scenes(root, b0, first, "")
    part: Node | None = None
    has_division = any(h.kind == "part" and h.role != "frame" for h in headings)
    chapter_no = 0
    part_no = 0
    for i, h in enumerate(headings):
        nxt = headings[i + 1].start if i + 1 < len(headings) else b1
        if h.kind == "part":
            part_no += 1
            part = Node("part", _heading_title(h), h.end, nxt, id=f"p{part_no}", heading=(h.start, h.end))
            root.children.append(part)
            add_scenes(part, h.end, nxt, f"p{part_no}.")
            if not _adopts_chapters(h, has_division):
                part = None  # the chapters after it are the book's
            continue
        chapter_no += 1
        ch = Node("chapter", _heading_title(h), h.end, nxt, id=f"c{chapter_no}", heading=(h.start, h.end))
        add_scenes(ch, h.end, nxt, f"c{chapter_no}.")
        (part or root).children.append(ch)
    # extents and word counts, bottom-up
    for node in root.post_order():
        if node.kind != "scene":
            node.words = sum(c.words for c in node.children)
            if node.kind == "part" and node.children:
                node.end = max(node.end, node.children[-1].end)
    if not book_title:
        book_title = _guess_title(text, b0, b1, p)
    root.title = book_title
    ms = Manuscript(text=text, root=root, path=p, title=book_title, body=(b0, b1), removed=removed)
    compute_source_hashes(ms)
    return ms


def _adopts_chapters(h: _Candidate, has_division: bool) -> bool:
    """Whether the chapters after part heading ``h`` are its own.

    A book, part or volume holds the chapters up to the next part heading; so does an epilogue
    (War and Peace's FIRST EPILOGUE has sixteen). A prologue or interlude holds them only in a
    book divided into parts; in a book of chapters alone it is a part of its own text, and
    "Chapter 1" after it is the book's.
    """
    return h.role != "frame" or h.key in ("epilogue", "epílogo", "epilogo") or has_division


def _first_line(s: str) -> str:
    for line in s.splitlines():
        line = line.strip().strip("#*_ ").rstrip(";:,")
        if line:
            return line[:120]
    return ""


def _guess_title(text: str, b0: int, b1: int, path: Path | None) -> str:
    m = MD_HEADING.match(text[b0:b1].lstrip().split("\n", 1)[0]) if text[b0:b1].strip() else None
    if m and len(m.group(1)) == 1:
        return m.group(2).strip()
    if path is not None:
        return path.stem.replace("_", " ").replace("-", " ").strip() or path.name
    return "Untitled"


def compute_source_hashes(ms: Manuscript) -> None:
    """Each node's ``source_hash``: of its own text (scene) or of its children's hashes and titles."""
    for node in ms.root.post_order():
        if node.kind == "scene":
            node.source_hash = sha(ms.node_text(node))
        else:
            node.source_hash = sha([node.kind, node.title] + [[c.id, c.title, c.source_hash] for c in node.children])


def uncovered_text(ms: Manuscript) -> list[tuple[int, int]]:
    """Spans of the manuscript with words that are in no scene, heading or stripped region (should be none)."""
    covered = sorted([(n.start, n.end) for n in ms.root.scenes()] + [n.heading for n in ms.root.walk() if n.heading]
                     + [(a, b) for a, b, _ in ms.removed])
    gaps = []
    pos = 0
    for a, b in covered:
        if a > pos and count_words(ms.text[pos:a]):
            gaps.append((pos, a))
        pos = max(pos, b)
    if pos < len(ms.text) and count_words(ms.text[pos:]):
        gaps.append((pos, len(ms.text)))
    return gaps
