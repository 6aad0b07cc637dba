"""Everything that depends on the budget: blocks split at their joints, packed into runs, small runs
absorbed, and the overlap of each run taken from the previous one's last whole sentences."""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from itertools import accumulate, repeat

from ctxfst_tui.core.chunking.blocks import PROSE_KINDS, ContentBlock, ParsedDoc
from ctxfst_tui.core.chunking.cuts import SPLIT_LEVELS, cut_points, fence_regions, line_starts, window_start, window_starts
from ctxfst_tui.core.chunking.markdown import FENCE_OPEN
from ctxfst_tui.core.chunking.options import ChunkOptions
from ctxfst_tui.core.chunking.tokens import _np
from ctxfst_tui.core.chunking.tokens import TokenCounter

_SENTENCE_CACHE_MAX = 100_000  # entries kept per document (sentence starts of overlap windows)


@dataclass(slots=True)
class Piece:
    """A part of a block split at its joints, as it is packed (a whole block is its own piece)."""

    bi: int  # block index
    pa: int  # the real part: [pa, pz) of the block's text
    pz: int
    text: str  # content (real part plus synthetic lines)
    chars: int
    toks: int
    cost: int  # in the budget's unit
    first: bool  # the block's first part
    synth: tuple[tuple[int, int], ...]
    over: bool  # one atomic unit over the budget
    midline: bool  # token sum is an upper bound (a cut inside a line, stripped text): recount
    kind: str
    heading: bool
    sstart: bool  # starts a section (first part of a heading or of a block after a tag)
    hard: bool  # must start a chunk
    section: int
    path: tuple[str, ...]
    prose: bool  # overlap can be taken from its end
    blank: bool  # white space only


class Run:
    """A chunk being packed."""

    __slots__ = ("pieces", "cost", "budget", "reserved", "header")

    def __init__(self, pieces: list[Piece], budget: int, reserved: int, header: tuple, cost: int):
        self.pieces = pieces
        self.cost = cost
        self.budget = budget  # room for the body: the size minus header and context reserve
        self.reserved = reserved  # part of that room kept for the overlap
        self.header = header  # (text, cost, tokens)


def _group(costs: list[int], limit: int, first_limit: int, first_bias: int = 0, prefix=None) -> list[tuple[int, int]]:
    """Consecutive groups of units, each within its limit when possible, balanced in size.

    ``first_bias``: how much more the first group's units may hold than the others' in a
    balanced split (e.g. it holds the real opening fence the others get as synthetic text).
    ``prefix``: the running sums of ``costs`` from 0, when known.
    """

    if prefix is None:
        prefix = list(accumulate(costs, initial=0))
    count = len(costs)
    right = bisect.bisect_right

    def greedy(lim: int, first: int) -> list[tuple[int, int]]:
        # a group takes units while they fit (at least one): it ends before the first unit whose
        # cost would take the running sum over the cap
        groups = []
        gi, cap = 0, first
        while True:
            j = right(prefix, prefix[gi] + cap, gi + 2)
            if j > count:
                groups.append((gi, count))
                return groups
            groups.append((gi, j - 1))
            gi, cap = j - 1, lim

    g = greedy(limit, first_limit)
    if len(g) > 1:
        n = len(g)
        soft = -(-prefix[-1] // n)
        for slack in (1.0, 1.05, 1.15, 1.3):
            s = min(limit, int(soft * slack) + 1)
            g2 = greedy(s, min(first_limit, max(1, s + first_bias)))
            if len(g2) <= n:
                return g2
    return g


def _flat_spans(spans: list[tuple[int, int]], costs: list[int], toks: list[int]) -> tuple:
    """Spans and their costs as flat tuples of numbers, to keep (the collector stops tracking them)."""
    return tuple([x for x, _ in spans]), tuple([y for _, y in spans]), tuple(costs), tuple(toks)


def _unflat_spans(got: tuple) -> tuple[list[tuple[int, int]], tuple, tuple]:
    xs, ys, costs, toks = got
    return list(zip(xs, ys)), costs, toks


class Packer:
    """Everything that depends on the budget: splitting, packing, small chunks, overlap."""

    def __init__(self, doc: ParsedDoc, opts: ChunkOptions, counter: TokenCounter | None):
        self.doc = doc
        self.opts = opts
        self.counter = counter
        self.tokens = opts.unit == "tokens"
        self.size = opts.size
        self.ov = opts.overlap_size
        self.min = opts.min_size
        self.header_in_text = opts.prepend_heading and opts.embed != "content"
        self._headers: dict[tuple[str, ...], tuple[str, int, int]] = {}
        self._runs_at: dict[tuple[str, ...], tuple] = {}  # path -> (header, body budget)
        self._candidates = doc.header_candidates[opts.heading_path]  # path -> header texts to try
        self._first = doc.first_headers[(opts.heading_path, self.header_in_text)]  # path -> (cost, header)
        self._third = self.size // 3  # the most a header may cost
        self._room = self.size - opts.context_reserve
        self.any_synth = False  # a piece with synthetic lines (a reopened fence, a repeated header)

    # measures
    def measure_many(self, texts: list[str]) -> tuple[list[int], list[int]]:
        """(costs in the unit, token counts) of texts; token counts are 0 when not counted."""
        toks = self.counter.count_many(texts) if self.counter is not None else [0] * len(texts)
        costs = toks if self.tokens else [len(t) for t in texts]
        return costs, toks

    def header(self, path: tuple[str, ...]) -> tuple[str, int, int]:
        """(header text, its cost in the budget, its tokens in ``text``) for a heading path.

        The full path when ``heading_path``, else the nearest heading; a header that would take
        more than a third of the budget falls back to the nearest heading, then to none.
        """
        first = self._first.get(path)
        if first is None:
            first = self.first_header(path)
        if first[0] <= self.size // 3:
            return first[1]
        got = self._headers.get(path)
        if got is not None:
            return got
        candidates = self._candidates.get(path)  # (kept with the document: the same for every budget)
        if candidates is None:
            candidates = [" > ".join(path)] if self.opts.heading_path and len(path) > 1 else []
            if path:
                candidates.append(path[-1])
            candidates = self._candidates[path] = tuple(candidates)
        result = ("", 0, 0)
        known = self.doc.header_toks
        for h in candidates:
            if not self.header_in_text:
                result = (h, 0, 0)
                break
            toks = 0
            if self.counter is not None:
                toks = known.get(h)
                if toks is None:
                    toks = known[h] = self.counter.count(h + "\n\n")
            cost = toks if self.tokens else len(h) + 2
            if cost <= self.size // 3:
                result = (h, cost, toks)
                break
        self._headers[path] = result
        return result

    def first_header(self, path: tuple[str, ...]) -> tuple[int, tuple[str, int, int]]:
        """(cost, header) of the first header tried for a path: the one taken when its cost is
        within a third of the budget (kept with the document: the same for every budget)."""
        if not path:
            got = (0, ("", 0, 0))
        else:
            h = " > ".join(path) if self.opts.heading_path and len(path) > 1 else path[-1]
            if not self.header_in_text:
                got = (0, (h, 0, 0))
            else:
                toks = 0
                if self.counter is not None:
                    known = self.doc.header_toks
                    toks = known.get(h)
                    if toks is None:
                        toks = known[h] = self.counter.count(h + "\n\n")
                cost = toks if self.tokens else len(h) + 2
                got = (cost, (h, cost, toks))
        self._first[path] = got
        return got

    def body_budget(self, path: tuple[str, ...]) -> int:
        got = self._runs_at.get(path)
        if got is None:
            got = self.run_at(path)
        return got[1]

    def run_at(self, path: tuple[str, ...]) -> tuple[tuple[str, int, int], int]:
        """(header, room for the body) of a chunk at a heading path."""
        header = self.header(path)
        got = self._runs_at[path] = (header, max(1, self.size - self.opts.context_reserve - header[1]))
        return got

    # splitting
    def pieces(self) -> list[Piece]:
        """The blocks, each block over its room replaced by its parts. Only the blocks that may be
        over (costlier than the smallest room a header leaves) are looked at."""
        doc = self.doc
        blocks = doc.blocks
        self.prime_headers(blocks)
        costs = doc.costs
        if costs is None:
            costs = doc.costs = [b.cost for b in blocks]
        smallest_room = max(1, self.size - self.opts.context_reserve - self.size // 3)
        marks = doc.marks
        arr = marks.get("costs")
        if arr is not None and arr is not True:  # numpy, from the second budget on
            over = _np.flatnonzero(arr > smallest_room).tolist()
        else:
            over = [i for i, c in enumerate(costs) if c > smallest_room]
            if _np is not None:
                marks["costs"] = _np.array(costs) if arr else True
        out: list = []
        done = 0
        firsts = self._first
        third = self._third
        room0 = self._room
        for bi in over:
            b = blocks[bi]
            first = firsts.get(b.path)
            if first is not None and first[0] <= third:  # (body_budget, inline)
                room = room0 - first[0]
                if room < 1:
                    room = 1
            else:
                room = self.body_budget(b.path)
            if b.cost <= room:
                continue
            out += blocks[done:bi]
            done = bi + 1
            out.extend(self.split_block(bi, b, room))
        if done:
            out += blocks[done:]
            return out
        return list(blocks)

    def split_block(self, bi: int, b: ContentBlock, room: int) -> list[Piece]:
        """A block over its room, split at its joints (or one atomic piece, flagged)."""
        if b.kind in ("heading", "rule") or (b.kind not in PROSE_KINDS and "\n" not in b.text.rstrip("\n")):
            return [self.piece(bi, b, 0, b.chars, b.text, b.toks, b.cost, True, (), True)]
        target = room
        if b.kind in PROSE_KINDS:
            target = max(room - self.ov, room // 2)
        first = target
        blocks = self.doc.blocks
        if bi and blocks[bi - 1].heading and blocks[bi - 1].section == b.section:
            hcost = blocks[bi - 1].cost
            if target - hcost >= target // 2:
                first = target - hcost
        if b.kind == "code" and b.fence:
            return self.split_fenced(bi, b, target, first)
        if b.kind == "table":
            return self.split_table(bi, b, target, first)
        return self.split_units(bi, b, target, first)

    def prime_headers(self, blocks: list[ContentBlock]) -> None:
        """Count every header of the document in one batch (once per document and heading_path)."""
        if self.header_in_text and self.counter is not None:
            self.doc.prime_headers(self.counter, self.opts.heading_path)

    def piece(self, bi: int, b: ContentBlock, pa: int, pz: int, text: str, toks: int, cost: int, first: bool,
              synth: tuple = (), over: bool = False, midline: bool = False) -> Piece:
        blank = not text or text.isspace()
        return Piece(bi, pa, pz, text, len(text), toks, cost, first, synth, over, midline,
                      b.kind, b.heading and first, b.sstart and first, b.hard and first, b.section, b.path,
                      b.kind in PROSE_KINDS and not synth and not blank, blank)

    def unit_costs(self, b: ContentBlock, spans: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
        text = b.text
        if self.counter is None:
            chars = [z - a for a, z in spans]
            return chars, [0] * len(spans)
        if b.seg is not None:
            bs = b.start
            toks = self.doc.span_tokens([(bs + a, bs + z) for a, z in spans], b.bi)
        else:
            toks = [None] * len(spans)
        todo = [k for k, t in enumerate(toks) if t is None]
        if todo:
            counted = self.counter.count_many([text[spans[k][0] : spans[k][1]] for k in todo])
            for k, c in zip(todo, counted):
                toks[k] = c
        costs = toks if self.tokens else [z - a for a, z in spans]
        return costs, toks  # type: ignore[return-value]

    def units(self, b: ContentBlock, a: int, z: int, levels: tuple[str, ...], limit: int) -> list[tuple[int, int, int, int, bool]]:
        """(start, end, cost, tokens, atomic-over) units of b.text[a:z], split level by level."""
        text = b.text
        if not levels:
            costs, toks = self.unit_costs(b, [(a, z)])
            return [(a, z, costs[0], toks[0], costs[0] > limit)]
        key = (b.bi, a, z, levels[0])
        got = self.doc.unit_cache.get(key)  # the joints of a block do not depend on the budget
        if got is None:
            cuts = [a + c for c in cut_points(text[a:z], levels[0])]
            regions = self.fences(b)
            if regions:
                cuts = [c for c in cuts if not any(x < c < y for x, y in regions)]
            bounds = [a] + cuts + [z]
            spans = [(x, y) for x, y in zip(bounds, bounds[1:]) if y > x]
            costs, toks = self.unit_costs(b, spans)
            # kept as flat tuples of numbers (the collector stops tracking them)
            got = self.doc.unit_cache[key] = (
                tuple([x for x, _ in spans]), tuple([y for _, y in spans]), tuple(costs), tuple(toks),
                max(costs, default=0),
            )
        xs, ys, costs, toks, most = got
        if most <= limit:  # no unit to split further
            return list(zip(xs, ys, costs, toks, repeat(False)))
        out = []
        for x, y, c, t in zip(xs, ys, costs, toks):
            if c > limit:
                out.extend(self.units(b, x, y, levels[1:], limit))
            else:
                out.append((x, y, c, t, False))
        return out

    def fences(self, b: ContentBlock) -> list[tuple[int, int]]:
        got = self.doc.fence_cache.get(b.bi)
        if got is None:
            got = self.doc.fence_cache[b.bi] = fence_regions(b.text) if b.kind in ("list", "quote") else []
        return got

    def split_units(self, bi: int, b: ContentBlock, target: int, first: int) -> list[Piece]:
        levels = SPLIT_LEVELS.get(b.kind, ("sentence", "line"))
        text = b.text
        out = []
        cache = self.doc.unit_cache
        got = cache.get((bi, 0, b.chars, levels[0]))
        if got is not None and got[4] <= target:  # its units at the first level all fit (as units() gives them)
            xs, ys, costs, toks, _ = got
            sums = cache.get((bi, "sums", levels[0]))
            if sums is None:
                sums = cache[(bi, "sums", levels[0])] = (tuple(accumulate(costs, initial=0)),
                                                         tuple(accumulate(toks, initial=0)))
            cost_at, tok_at = sums
            groups = _group(costs, target, first, first - target, cost_at)
            last = len(groups) - 1
            for k, (i, j) in enumerate(groups):
                pa = 0 if k == 0 else xs[i]
                pz = b.chars if k == last else ys[j - 1]
                out.append(self.piece(bi, b, pa, pz, text[pa:pz], tok_at[j] - tok_at[i], cost_at[j] - cost_at[i],
                                      k == 0, (), False, b.midline and k == 0))
            return out
        units = self.units(b, 0, b.chars, levels, target)
        costs = [u[2] for u in units]
        groups = _group(costs, target, first, first - target)
        cost_at = list(accumulate(costs, initial=0))
        tok_at = list(accumulate([u[3] for u in units], initial=0))
        last = len(groups) - 1
        for k, (i, j) in enumerate(groups):
            pa = 0 if k == 0 else units[i][0]
            pz = b.chars if k == last else units[j - 1][1]
            cost = cost_at[j] - cost_at[i]
            toks = tok_at[j] - tok_at[i]
            over = j - i == 1 and units[i][4]
            # cuts are at line starts or where pre-tokenisation cuts: the sums are exact
            out.append(self.piece(bi, b, pa, pz, text[pa:pz], toks, cost, k == 0, (), over, b.midline and k == 0))
        return out

    def split_fenced(self, bi: int, b: ContentBlock, target: int, first: int) -> list[Piece]:
        """A fenced code block by lines; each part closes the fence and the next reopens it."""
        text = b.text
        nl = text.find("\n")
        open_line = text[: nl + 1]
        m = FENCE_OPEN.match(open_line)
        fence = m.group(2) if m else b.fence
        indent = m.group(1) if m else ""
        body_start = nl + 1
        trimmed = text.rstrip()
        ls = trimmed.rfind("\n") + 1
        closed = ls >= body_start and re.fullmatch(
            r" {0,3}" + re.escape(fence[0]) + "{%d,}[ \t]*" % len(fence), trimmed[ls:]
        )
        close_start = ls if closed else len(text)
        close_line = f"{indent}{fence}\n"
        if close_start <= body_start:  # no line between the fences: nothing to split at
            return [self.piece(bi, b, 0, b.chars, text, b.toks, b.cost, True, (), b.cost > target, b.midline)]
        # units: the lines of the body, the first one with the opening line (and any blank lines
        # after it), so that every cut is at the start of a non-blank line and counts add up exactly
        got = self.doc.unit_cache.get((bi, "fenced"))
        if got is None:
            cuts = [body_start + c for c in line_starts(text[body_start:close_start])]
            bounds = [0] + [c for c in cuts if c > body_start or text[body_start:c].strip()] + [close_start]
            spans = [(x, y) for x, y in zip(bounds, bounds[1:]) if y > x]
            got = self.doc.unit_cache[(bi, "fenced")] = _flat_spans(spans, *self.unit_costs(b, spans))
        spans, costs, toks = _unflat_spans(got)
        (oc, cc, rc), (ot, ct, rt) = self.measure_many([open_line, close_line, text[close_start:]])
        limit = max(1, target - oc - max(cc, rc))
        groups = _group(costs, limit, max(1, first - max(cc, rc)), oc - (target - first))
        out = []
        last = len(groups) - 1
        for k, (i, j) in enumerate(groups):
            pa = 0 if k == 0 else spans[i][0]
            pz = len(text) if k == last else spans[j - 1][1]
            real = text[pa:pz]
            prefix = open_line if k else ""
            suffix = close_line if k != last else ""
            synth = []
            if prefix:
                synth.append((0, len(prefix)))
            if suffix:
                synth.append((len(prefix) + len(real), len(prefix) + len(real) + len(suffix)))
            cost = (oc if k else 0) + sum(costs[i:j]) + (cc if k != last else rc)
            tk = (ot if k else 0) + sum(toks[i:j]) + (ct if k != last else rt)
            over = j - i == 1 and costs[i] > (limit + oc if k == 0 else limit)
            out.append(self.piece(bi, b, pa, pz, prefix + real + suffix, tk, cost, k == 0, tuple(synth), over))
            if synth:
                self.any_synth = True
        return out

    def split_table(self, bi: int, b: ContentBlock, target: int, first: int) -> list[Piece]:
        """A table by rows; each part after the first repeats the header and delimiter rows."""
        text = b.text
        starts = line_starts(text)
        if len(starts) < 2:
            return self.split_units(bi, b, target, first)
        head_end = starts[1]
        got = self.doc.unit_cache.get((bi, "table"))
        if got is None:
            bounds = starts[1:] + [len(text)]
            spans = [(x, y) for x, y in zip(bounds, bounds[1:]) if y > x]
            got = self.doc.unit_cache[(bi, "table")] = _flat_spans(spans, *self.unit_costs(b, spans))
        spans, costs, toks = _unflat_spans(got)
        if not spans:
            return self.split_units(bi, b, target, first)
        (hc,), (ht,) = self.unit_costs(b, [(0, head_end)])
        prefix_text = text[:head_end]
        limit = max(1, target - hc)
        groups = _group(costs, limit, max(1, first - hc), first - target)
        out = []
        last = len(groups) - 1
        for k, (i, j) in enumerate(groups):
            pa = 0 if k == 0 else spans[i][0]
            pz = len(text) if k == last else spans[j - 1][1]
            prefix = prefix_text if k else ""
            synth = ((0, len(prefix)),) if prefix else ()
            cost = hc + sum(costs[i:j])
            tk = ht + sum(toks[i:j])
            over = j - i == 1 and costs[i] > limit
            out.append(self.piece(bi, b, pa, pz, prefix + text[pa:pz], tk, cost, k == 0, synth, over))
            if synth:
                self.any_synth = True
        return out

    # packing
    def run_for(self, p: Piece, prev: Run | None) -> Run:
        path = p.path
        first = self._first.get(path)
        if first is not None and first[0] <= self._third:  # the common case
            header = first[1]
            budget = self._room - header[1]
            if budget < 1:
                budget = 1
        else:
            header, budget = self.run_at(path)
        reserved = 0
        if self.ov and prev is not None and not p.sstart and prev.pieces[-1].prose and p.cost <= budget - self.ov:
            reserved = self.ov
        return Run([p], budget, reserved, header, p.cost)

    def pack(self, pieces: list[Piece]) -> list[Run]:
        """Greedy packing: a piece joins the current chunk if it fits, unless it starts a section
        (a heading, once the chunk is big enough) or must start a chunk (after a <Chunk> tag)."""
        runs: list[Run] = []
        split = self.opts.split_on_headings
        min_body = self.min
        if not pieces:
            return runs
        firsts, third, room0, ov = self._first, self._third, self._room, self.ov
        cur = self.run_for(pieces[0], None)
        cost, cap, hcost, add = cur.cost, cur.budget - cur.reserved, cur.header[1], cur.pieces.append
        body = not cur.pieces[0].heading  # the chunk holds more than headings
        i = 1
        n = len(pieces)
        while i < n:
            p = pieces[i]
            i += 1
            hard = p.hard
            # a new section starts a new chunk, unless this one is still small or only headings
            if not hard and not (p.sstart and split and body and cost + hcost >= min_body):
                if not body and not p.heading:
                    body = True
                c = p.cost
                if c <= cap - cost:  # the common case: it fits
                    add(p)
                    cost += c
                    continue
                if p.first and all(q.heading for q in cur.pieces):
                    # only headings so far: split the block so that its first part follows them
                    parts = self.split_to_fit(p, cap - cost)
                    if parts:
                        add(parts[0])
                        cost += parts[0].cost
                        pieces[i:i] = parts[1:]
                        n = len(pieces)
                        continue
            cur.cost = cost
            pcs = cur.pieces
            runs.append(cur)
            if not hard and len(pcs) > 1 and pcs[-1].heading:
                # a chunk does not end on a heading: the heading moves to the next chunk
                carry: list[Piece] = []
                while len(pcs) > len(carry) + 1 and pcs[-1 - len(carry)].heading:
                    carry.insert(0, pcs[-1 - len(carry)])
                del pcs[-len(carry):]
                cur.cost -= sum(q.cost for q in carry)
                cur = self.run_for(carry[0], cur)
                for q in carry[1:]:
                    cur.pieces.append(q)
                    cur.cost += q.cost
                i -= 1  # p again, now after the carried headings
                body = False  # (headings only)
                cost, cap, hcost, add = cur.cost, cur.budget - cur.reserved, cur.header[1], cur.pieces.append
                continue
            # the next chunk starts with p (run_for, inline)
            first = firsts.get(p.path)
            if first is not None and first[0] <= third:
                header = first[1]
                budget = room0 - first[0]
                if budget < 1:
                    budget = 1
            else:
                header, budget = self.run_at(p.path)
            cost = p.cost
            cap = budget
            if ov and not p.sstart and pcs[-1].prose and cost <= budget - ov:
                cap = budget - ov
                cur = Run([p], budget, ov, header, cost)
            else:
                cur = Run([p], budget, 0, header, cost)
            hcost = header[1]
            add = cur.pieces.append
            body = not p.heading
        cur.cost = cost
        runs.append(cur)
        return runs

    def split_to_fit(self, p: Piece, room: int) -> list[Piece]:
        """A whole block split so that its first part fits in ``room`` (after a heading), or []."""
        b = self.doc.blocks[p.bi]
        if p is not b or room <= 0 or b.kind in ("heading", "rule"):
            return []
        full = self.body_budget(b.path)
        target = max(full - self.ov, full // 2) if b.kind in PROSE_KINDS else full
        if b.kind == "code" and b.fence:
            parts = self.split_fenced(p.bi, b, target, room)
        elif b.kind == "table":
            parts = self.split_table(p.bi, b, target, room)
        elif b.kind in PROSE_KINDS or "\n" in b.text.rstrip("\n"):
            parts = self.split_units(p.bi, b, target, room)
        else:
            return []
        if len(parts) < 2 or parts[0].cost > room:
            return []
        return parts

    def absorb_small(self, runs: list[Run]) -> list[Run]:
        """Chunks under the minimum: rebalanced within their section, or merged into a neighbour."""
        if self.min <= 0 or len(runs) < 2:
            return runs
        minimum = self.min
        i = 0
        while i < len(runs):
            r = runs[i]
            if r.cost + r.header[1] >= minimum or len(runs) < 2:
                i += 1
                continue
            first = r.pieces[0]
            prev = runs[i - 1] if i else None
            nxt = runs[i + 1] if i + 1 < len(runs) else None
            if prev is not None and not first.sstart and not first.hard:
                # the tail of a section: take whole pieces from the previous part of the section
                while r.cost + r.header[1] < minimum and len(prev.pieces) > 1:
                    q = prev.pieces[-1]
                    if q.heading or q.section != first.section or q.hard:
                        break
                    if prev.cost + prev.header[1] - q.cost < minimum or r.cost + q.cost > r.budget - r.reserved:
                        break
                    prev.pieces.pop()
                    prev.cost -= q.cost
                    r.pieces.insert(0, q)
                    r.cost += q.cost
                    first = q
                if r.cost + r.header[1] >= minimum:
                    i += 1
                    continue
            only_headings = all(q.heading for q in r.pieces)
            # (a heading belongs with what follows it, but a micro-chunk of headings alone is worse
            # than a chunk that ends on them: its text comes back in the next chunk's breadcrumb)
            can_prev = prev is not None and not first.hard and prev.cost + r.cost <= prev.budget - prev.reserved
            nfirst = nxt.pieces[0] if nxt is not None else None
            can_next = nfirst is not None and not nfirst.hard and r.cost + nxt.cost <= r.budget - r.reserved
            prefer_next = can_next and (
                only_headings
                or (len(nfirst.path) > len(first.path) and nfirst.path[: len(first.path)] == first.path)
                or (prev is None and not r.cost)
            )
            if can_next and (prefer_next or not can_prev):
                r.pieces.extend(nxt.pieces)
                r.cost += nxt.cost
                del runs[i + 1]
                continue
            if can_prev:
                prev.pieces.extend(r.pieces)
                prev.cost += r.cost
                del runs[i]
                continue
            i += 1
        return runs

    def overlaps(self, runs: list[Run]) -> tuple[list[str], list[int]]:
        """The overlap of each chunk, the previous chunk's last whole sentences that fit, and its tokens.

        Sentences are cut where pre-tokenisation cuts, so a suffix's count is the sum of its
        sentences' counts (read off the document's encoding, or each sentence counted once,
        cached): no suffix is encoded again. The candidates are the sentence and paragraph starts
        found in the last ``room * 16`` chars (``room`` chars for a budget in chars). They are
        first looked for in a window half as long: past where that window begins, its
        starts are the long window's (``window_start``); only a walk back to there needs the
        long window.
        """
        texts = [""] * len(runs)
        toks = [0] * len(runs)
        if not self.ov:
            return texts, toks
        cache = self.doc.sentence_cache  # (piece, window) -> [candidate starts, their sentences' counts]
        if len(cache) > _SENTENCE_CACHE_MAX:
            cache.clear()
        wanted = []  # (run index, room, last piece of the previous run, cache entry, long window key)
        for i in range(1, len(runs)):
            r, prev = runs[i], runs[i - 1]
            first = r.pieces[0]
            last = prev.pieces[-1]
            if first.sstart or first.hard or not last.prose:
                continue
            room = min(self.ov, r.budget - r.cost)
            if room <= 0:
                continue
            src = last.text
            n = len(src)
            lo = max(0, n - (room * 16 if self.tokens else room))
            key = (last.bi, last.pa, last.pz, lo)
            entry = cache.get(key)
            if entry is not None:
                if entry[0]:
                    wanted.append((i, room, last, entry, None))
                continue
            short = max(lo, n - room * 8) if self.tokens else lo
            if short > lo:
                skey = (last.bi, last.pa, last.pz, -short)
                entry = cache.get(skey)
                if entry is None:
                    w = window_start(src, short)
                    entry = cache[skey] = [[x for x in window_starts(src, short) if x > w], None]
                wanted.append((i, room, last, entry, key))
                continue
            entry = cache[key] = [window_starts(src, lo), None]
            if entry[0]:
                wanted.append((i, room, last, entry, None))
        while wanted:
            self._unit_counts([w for w in wanted if w[3][1] is None])
            again = []
            for i, room, last, entry, long_key in wanted:
                starts, counted = entry
                src = last.text
                nonblank = len(src.rstrip())  # a suffix from before this holds more than white space
                costs = counted if self.tokens else [z - a for a, z in zip(starts, starts[1:] + [len(src)])]
                total = total_toks = 0
                best = None
                for k in range(len(starts) - 1, -1, -1):
                    total += costs[k]
                    total_toks += counted[k]
                    if total > room:
                        break
                    if starts[k] < nonblank:
                        best = (starts[k], total_toks)
                else:
                    if long_key is not None:  # walked back to where the short window begins
                        full = cache.get(long_key)
                        if full is None:
                            full = cache[long_key] = [window_starts(src, long_key[3]), None]
                        if full[0]:
                            again.append((i, room, last, full, None))
                        continue
                if best is not None:
                    texts[i] = src[best[0] :]
                    toks[i] = best[1]
            wanted = again
        return texts, toks

    def _unit_counts(self, wanted: list[tuple]) -> None:
        """Token counts of the sentences from each overlap candidate to the next, into the cache
        entries: read off the document's encoding where their ends are pre-token boundaries, the
        others encoded (cached by text)."""
        if not wanted:
            return
        entries = []  # (last piece, cache entry), each entry once
        seen = set()
        for w in wanted:
            if id(w[3]) not in seen:
                seen.add(id(w[3]))
                entries.append((w[2], w[3]))
        if self.counter is None:
            for _, entry in entries:
                entry[1] = [0] * len(entry[0])
            return
        doc = self.doc
        blocks = doc.blocks
        out: list = [None] * len(entries)
        groups = []
        which = []
        if doc.ends is not None:
            for j, (last, entry) in enumerate(entries):
                b = blocks[last.bi]
                if b.seg and not last.synth:
                    base = b.start + last.pa
                    groups.append((last.bi, [base + x for x in entry[0]] + [base + len(last.text)]))
                    which.append(j)
        for j, got in zip(which, doc.cut_tokens(groups) if groups else []):
            out[j] = got
        texts = []
        for j, (last, entry) in enumerate(entries):
            got = out[j]
            if got is None:
                got = out[j] = [None] * len(entry[0])
            if None in got:
                src = last.text
                bounds = entry[0] + [len(src)]
                for k, c in enumerate(got):
                    if c is None:
                        texts.append(src[bounds[k] : bounds[k + 1]])
        if texts:
            counted = iter(self.counter.count_many(texts))
            for got in out:
                if None in got:
                    for k, c in enumerate(got):
                        if c is None:
                            got[k] = next(counted)
        for (_, entry), got in zip(entries, out):
            entry[1] = got


def merge_blank(runs: list[Run]) -> list[Run]:
    """A run with nothing but whitespace joins its neighbour rather than being lost."""
    for r in runs:
        for p in r.pieces:
            if not p.blank:
                break
        else:
            break
    else:
        return runs
    out: list[Run] = []
    pending: list[Piece] = []
    for r in runs:
        if all(p.blank for p in r.pieces):
            if out:
                out[-1].pieces.extend(r.pieces)
                out[-1].cost += r.cost
            else:
                pending.extend(r.pieces)
            continue
        if pending:
            r.pieces[:0] = pending
            r.cost += sum(p.cost for p in pending)
            pending = []
        out.append(r)
    return out
