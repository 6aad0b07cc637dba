"""Query translation: a question in another script than the documents is translated first.

A Chinese question over English notes shares no words with them and MiniLM is an English
model, so the local model translates it (a few-shot prompt a small base model follows; its
answers are cached like every completion) and both the question and its translation are searched.
The direction is decided by the scripts: which one the documents are mostly written in.
"""
from __future__ import annotations

import threading
from typing import Any, Iterable

from ctxfst_tui.core.retrieval.analyzer import CJK_RUN, has_cjk

# Examples written for this prompt (not taken from any benchmark): short questions a curator asks.
EXAMPLES_TO_ENGLISH = (
    ("我有哪些前端經驗？", "What frontend experience do I have?"),
    ("我在哪裡寫過快取的設計？", "Where did I write about cache design?"),
    ("部署到雲端需要注意什麼？", "What should I watch for when deploying to the cloud?"),
)
EXAMPLES_TO_CHINESE = tuple((en, zh) for zh, en in EXAMPLES_TO_ENGLISH)


def cjk_share(texts: Iterable[str]) -> float:
    """Share of letters that are CJK across ``texts`` (0.0 for English notes)."""
    cjk = other = 0
    for t in texts:
        run = sum(len(m.group(0)) for m in CJK_RUN.finditer(t))
        cjk += run
        other += sum(1 for ch in t if ch.isalpha()) - run
    total = cjk + other
    return cjk / total if total else 0.0


def target_language(query: str, documents_cjk_share: float) -> str | None:
    """"English" or "Chinese" when the query's script differs from the documents', else None."""
    query_cjk = has_cjk(query)
    if query_cjk and documents_cjk_share < 0.2:
        return "English"
    if not query_cjk and documents_cjk_share > 0.5:
        return "Chinese"
    return None


def prompt_for(query: str, target: str) -> str:
    source = "Chinese" if target == "English" else "English"
    examples = EXAMPLES_TO_ENGLISH if target == "English" else EXAMPLES_TO_CHINESE
    lines = [f"Translate each question from {source} into {target}.", ""]
    for src, dst in examples:
        lines += [f"{source}: {src}", f"{target}: {dst}", ""]
    lines += [f"{source}: {' '.join(query.split())}", f"{target}:"]
    return "\n".join(lines)


def _acceptable(text: str, target: str) -> bool:
    if not text or len(text) > 300:
        return False
    if target == "English" and has_cjk(text):
        return False
    if target == "Chinese" and not has_cjk(text):
        return False
    return text not in {dst for _, dst in EXAMPLES_TO_ENGLISH + EXAMPLES_TO_CHINESE}


def translate(query: str, target: str, backend: Any, *, cancel: threading.Event | None = None) -> str | None:
    """The model's translation of ``query`` into ``target``, or None when it gave nothing usable."""
    completion = backend.complete(prompt_for(query, target), max_tokens=48, stop=["\n"], temperature=0.0, cancel=cancel)
    text = " ".join(completion.text.split()).strip()
    return text if _acceptable(text, target) else None
