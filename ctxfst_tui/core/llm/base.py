"""The backend protocol shared by the in-process llama.cpp runtime and OpenAI-compatible servers.

A backend turns one prompt into one :class:`Completion`. Everything a job needs from a
model goes through :meth:`Backend.complete`: a ``threading.Event`` cancels it between
tokens, ``on_token`` receives the text as it streams. Problems become :class:`ModelError`
with a one-line message a front end can show as is; cancellation is :class:`Cancelled`
(not an error: the job stops, nothing is reported as failed).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

TokenCallback = Callable[[str], None]


class ModelError(Exception):
    """A model call that cannot be made or failed; ``str(exc)`` is one line for the user."""

    def __init__(self, message: str, *, retryable: bool = False):
        super().__init__(" ".join(str(message).split()))
        self.retryable = retryable


class ModelNotFound(ModelError):
    """The model file (or the bundled model) is missing or cannot be loaded."""


class ModelUnavailable(ModelNotFound):
    """The model cannot run here: the bundled model package is missing, or the model's self-test
    in a child process crashed, hung or failed (see :mod:`.probe`). The message names the cause
    and the way out; a model that failed its self-test is never loaded in-process."""


class ContextOverflow(ModelError):
    """The prompt and the tokens to generate do not fit the model's context window."""


class EndpointError(ModelError):
    """An HTTP endpoint failed: connection refused, timeout, 4xx/5xx after retries."""


class Cancelled(Exception):
    """The caller's cancel event was set; the call stopped between two tokens."""


@dataclass
class Completion:
    """One generated text and what it cost.

    ``finish_reason``: ``"stop"`` (a stop sequence or end of text) or ``"length"`` (hit
    ``max_tokens``). ``cached``: served from the completion cache, no model call was made.
    ``seconds``: wall time of the call; ``prompt_seconds``: time to the first token.
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = "stop"
    cached: bool = False
    seconds: float = 0.0
    prompt_seconds: float = 0.0

    @property
    def tokens_per_second(self) -> float:
        gen = self.seconds - self.prompt_seconds
        return self.completion_tokens / gen if gen > 0 and self.completion_tokens else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text, "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "finish_reason": self.finish_reason, "cached": self.cached,
            "seconds": round(self.seconds, 4), "prompt_seconds": round(self.prompt_seconds, 4),
        }


@runtime_checkable
class Backend(Protocol):
    """What a job needs from a model.

    ``name``: the backend kind (``"llama"``, ``"openai"``); ``model_id``: what identifies
    the weights for caching (a GGUF's sha256, or ``model@endpoint``); ``context_size``: the
    context window in tokens; ``chat``: prompts are sent as one user chat message (the model
    has a chat template / the endpoint is ``/chat/completions``), else as raw completion text.
    """

    name: str

    @property
    def model_id(self) -> str: ...

    @property
    def context_size(self) -> int: ...

    @property
    def chat(self) -> bool: ...

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        temperature: float | None = None,
        cancel: threading.Event | None = None,
        on_token: TokenCallback | None = None,
    ) -> Completion: ...

    def count_tokens(self, text: str) -> int: ...


@dataclass
class GenerationDefaults:
    """Settings a backend applies when a call does not give them."""

    max_tokens: int = 256
    temperature: float = 0.0
    stop: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def resolve(self, max_tokens: int | None, temperature: float | None, stop: Any) -> tuple[int, float, list[str]]:
        """A call's (max_tokens, temperature, stops), each falling back to these defaults."""
        return (
            self.max_tokens if max_tokens is None else int(max_tokens),
            self.temperature if temperature is None else float(temperature),
            list(self.stop if stop is None else stop),
        )


def check_cancel(cancel: threading.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise Cancelled("cancelled")


def cache_params(backend: Any) -> dict[str, Any]:
    """Settings of ``backend`` (beyond the call's own) that change its output, for cache keys."""
    fn = getattr(backend, "cache_params", None)
    return dict(fn()) if callable(fn) else {}
