"""Model fakes, in one place: the Backend protocol (``core.llm.base``) scripted for tests.

Each fake answers deterministically from the prompt, counts its calls and honours the cancel event
the way a real backend does, so core, services and Pilot tests exercise the real job and gate code
without llama.cpp. The real model is tested on its own (tests marked ``model``).
"""
from __future__ import annotations

import hashlib
import threading
import time

from ctxfst_tui.core.llm.base import Cancelled, Completion


class FakeBackend:
    """What every fake shares: a name, no chat template, tokens counted as words, a call counter."""

    name = "fake"
    model_id = "fake"
    context_size = 4096
    chat = False

    def __init__(self) -> None:
        self.calls = 0

    def count_tokens(self, text: str) -> int:
        return len(text.split())


# ---------------------------------------------------------------- counting (the cache tests)

class CountingBackend(FakeBackend):
    """A deterministic fake that counts the calls that reach it."""

    model_id = "fake-1"

    def complete(self, prompt, *, max_tokens=None, stop=None, temperature=None, cancel=None, on_token=None):
        self.calls += 1
        return Completion(f"echo:{len(prompt)}:{max_tokens}", len(prompt.split()), 3)


# ---------------------------------------------------------------- entity names (extraction)

class EntityNamer(FakeBackend):
    """Answers the same list of named things (or raises ``text`` when it is an exception)."""

    def __init__(self, text="Kubernetes (platform); Fakeium (tool); PgBouncer (tool); Dashboard (product)"):
        super().__init__()
        self.text = text

    def complete(self, prompt, **kw):
        self.calls += 1
        if isinstance(self.text, Exception):
            raise self.text
        return Completion(" " + self.text, 10, 10)


# ---------------------------------------------------------------- notes for the orders-service runbook

# The note a good model writes for each chunk of the runbook documents (contextualize).
RUNBOOK_NOTES = {
    "ops:deploy": " the deployment of the orders service with Helm. It covers the automatic rollback of the release.\nTerms: helm upgrade; --atomic",
    "ops:database": " the orders service database. It covers the PostgreSQL connection limit behind PgBouncer.\nTerms: PostgreSQL; PgBouncer; 40 server connections",
    "ops:cache": " the session cache of the orders service. It covers the Redis eviction policy.\nTerms: Redis; allkeys-lru",
}


def chunk_of(prompt: str) -> str:
    """The runbook chunk a contextualize prompt is about (by a word of its section), else "?"."""
    tail = prompt.rsplit("Section:", 1)[-1]
    for cid, word in (("ops:deploy", "helm upgrade"), ("ops:database", "PgBouncer"), ("ops:cache", "allkeys-lru")):
        if word in tail:
            return cid
    return "?"


class NotesBackend(FakeBackend):
    """A scripted backend: ``answer(prompt, n)`` gives the text of the n-th call for that chunk
    (an exception is raised); ``delay`` seconds per call, the cancel event checked every 10 ms."""

    model_id = "fake-model"
    context_size = 8192

    def __init__(self, answer=None, delay: float = 0.0, concurrency: int = 1):
        super().__init__()
        self.answer = answer or (lambda prompt, n: RUNBOOK_NOTES[chunk_of(prompt)])
        self.delay = delay
        self.concurrency = concurrency
        self.prompts: list[str] = []
        self.per_chunk: dict[str, int] = {}
        self.lock = threading.Lock()

    def complete(self, prompt, *, max_tokens=None, stop=None, temperature=None, cancel=None, on_token=None):
        with self.lock:
            self.calls += 1
            self.prompts.append(prompt)
            cid = chunk_of(prompt)
            n = self.per_chunk[cid] = self.per_chunk.get(cid, 0) + 1
        if self.delay:  # a slow model: "tokens" every 10 ms, cancel checked between them
            end = time.monotonic() + self.delay
            while time.monotonic() < end:
                if cancel is not None and cancel.is_set():
                    raise Cancelled("cancelled")
                time.sleep(0.01)
        text = self.answer(prompt, n)
        if isinstance(text, Exception):
            raise text
        return Completion(text, len(prompt.split()), len(text.split()), "stop", False, self.delay + 0.01, 0.005)


# The notes the workbench's model jobs receive, keyed by a word of the chunk they are for.
STREAMED_NOTES = {
    "helm upgrade": " the deployment of the orders service with Helm. It covers the automatic rollback of the release.\nTerms: helm upgrade; --atomic",
    "PgBouncer": " the orders service database. It covers the PostgreSQL connection limit behind PgBouncer.\nTerms: PostgreSQL; PgBouncer",
    "allkeys-lru": " the session cache of the orders service. It covers the Redis eviction policy.\nTerms: Redis; allkeys-lru",
}


class StreamingNotesBackend(FakeBackend):
    """A note per chunk (entity names for extraction prompts), streamed word by word with ``delay``
    seconds per word; the cancel event is honoured between words. Raises ``error`` when given."""

    model_id = "fake-model"
    context_size = 8192
    concurrency = 1

    def __init__(self, delay: float = 0.0, error: Exception | None = None) -> None:
        super().__init__()
        self.delay = delay
        self.error = error
        self.finished = 0
        self.cancelled = threading.Event()
        self.started = threading.Event()
        self.threads: set[str] = set()

    def _answer(self, prompt: str) -> str:
        if "Named things in a text" in prompt:  # the entity-extraction prompt
            tail = prompt.rsplit("Text:", 1)[-1]
            found = [name for name in ("Redis", "PgBouncer", "PostgreSQL") if name in tail]
            return " " + "; ".join(found) if found else " none"
        tail = prompt.rsplit("Section:", 1)[-1]
        return next((note for word, note in STREAMED_NOTES.items() if word in tail), " something else entirely.")

    def complete(self, prompt, *, max_tokens=None, stop=None, temperature=None, cancel=None, on_token=None):
        self.calls += 1
        self.threads.add(threading.current_thread().name)
        self.started.set()
        if self.error is not None:
            raise self.error
        text = self._answer(prompt)
        t0 = time.perf_counter()
        for word in text.split(" "):
            if cancel is not None and cancel.is_set():
                self.cancelled.set()
                raise Cancelled("cancelled")
            if self.delay:
                end = time.monotonic() + self.delay
                while time.monotonic() < end:  # a slow token: cancel is checked every 10 ms
                    if cancel is not None and cancel.is_set():
                        self.cancelled.set()
                        raise Cancelled("cancelled")
                    time.sleep(0.01)
            if on_token is not None:
                on_token(word + " ")
        took = time.perf_counter() - t0
        self.finished += 1
        return Completion(text, len(prompt.split()), len(text.split()), "stop", False, took + 0.01, 0.005)


# ---------------------------------------------------------------- summaries of a story

class StoryBackend(FakeBackend):
    """Counts calls; answers a plausible, name-free summary that depends on the prompt (it passes
    the quality gate), and fails the test when a prompt does not fit the window.

    ``script``: answers to give first, in order (then the default answer). ``cancel_at``: on that
    call, set the cancel event and raise :class:`Cancelled` (a user pressing escape mid-call).
    ``padding``: sentences added to the default answer.
    """

    model_id = "fake-1"

    def __init__(self, *, context_size: int = 4096, script=None, cancel_at: int | None = None, model_id: str = "fake-1",
                 padding: int = 0):
        super().__init__()
        self.context_size = context_size
        self.padding = padding
        self.model_id = model_id
        self.prompts: list[str] = []
        self.script = list(script or [])
        self.cancel_at = cancel_at

    def count_tokens(self, text: str) -> int:
        return len(text.split()) * 4 // 3 + 1

    def _answer(self, prompt: str) -> str:
        if self.script:
            return self.script.pop(0)
        tag = hashlib.sha256(prompt.encode()).hexdigest()[:6]
        text = f" moves the story on in part {tag} and everyone there talks about it."
        return text + "".join(f" It goes on with step {tag}{i} of the plot." for i in range(self.padding))

    def complete(self, prompt, *, max_tokens=None, stop=None, temperature=None, cancel=None, on_token=None):
        self.calls += 1
        if self.cancel_at is not None and self.calls == self.cancel_at:
            if cancel is not None:
                cancel.set()
            raise Cancelled("cancelled")
        assert self.count_tokens(prompt) + (max_tokens or 0) <= self.context_size, "prompt does not fit the window"
        self.prompts.append(prompt)
        text = self._answer(prompt)
        return Completion(text, self.count_tokens(prompt), len(text.split()), "stop")


class BlockingStoryBackend(StoryBackend):
    """The story summaries of :class:`StoryBackend`, streamed, from a worker thread the test can
    see (``threads``). ``block_at``: from that call (1-based) on, wait until the cancel event is set,
    then raise :class:`Cancelled`, like a slow model whose user pressed escape."""

    def __init__(self, *, script: list[str] | None = None, block_at: int | None = None) -> None:
        super().__init__(script=script, model_id="fake-summarizer")
        self.finished = 0
        self.block_at = block_at
        self.blocked = threading.Event()
        self.cancelled = threading.Event()
        self.threads: set[str] = set()

    def complete(self, prompt, *, max_tokens=None, stop=None, temperature=None, cancel=None, on_token=None):
        self.calls += 1
        self.threads.add(threading.current_thread().name)
        if self.block_at is not None and self.calls >= self.block_at:
            self.blocked.set()
            while cancel is None or not cancel.wait(0.01):
                pass
            self.cancelled.set()
            raise Cancelled("cancelled")
        text = self._answer(prompt)
        for word in text.split(" "):
            if on_token is not None:
                on_token(word + " ")
        self.finished += 1
        return Completion(text, self.count_tokens(prompt), len(text.split()), "stop")


# ---------------------------------------------------------------- query translation (the Retrieval view)

class TranslatingBackend(FakeBackend):
    """Answers the translation prompt's last question from ``answers`` (question → translation);
    ``error``: raised instead, as a model that cannot run here."""

    def __init__(self, answers: dict[str, str] | None = None, error: Exception | None = None) -> None:
        super().__init__()
        self.answers = dict(answers or {})
        self.error = error
        self.asked: list[str] = []

    def complete(self, prompt, *, max_tokens=None, stop=None, temperature=None, cancel=None, on_token=None):
        self.calls += 1
        if self.error is not None:
            raise self.error
        question = prompt.rstrip().splitlines()[-2].split(": ", 1)[1]
        self.asked.append(question)
        return Completion(" " + self.answers.get(question, question), len(prompt.split()), 5)
