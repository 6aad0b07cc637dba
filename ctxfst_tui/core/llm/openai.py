"""A backend for any OpenAI-compatible HTTP endpoint (llama.cpp server, vLLM, Ollama, OpenAI).

HTTP goes through httpx. A completion is streamed (server-sent events) by an asyncio task in the
calling thread, which looks at the cancel event every :data:`CANCEL_POLL` seconds and cancels the
task when it is set: that closes the connection wherever the exchange is (connecting, waiting for
the first byte, between two tokens). httpx's blocking client cannot be interrupted that way.

* ``endpoint``: ``http://host:port``, ``.../v1``, ``.../v1/completions`` or
  ``.../v1/chat/completions``. The last two fix the API; otherwise ``api`` decides
  (``"chat"`` by default: remote servers mostly serve instruct models).
* ``api_key``: given, or read from ``CTXFST_TUI_API_KEY`` / ``OPENAI_API_KEY``.
* ``timeout``: seconds allowed to connect and for each wait on the server during a completion;
  ``connect_timeout``: the same for listing the served models.
* Retries: connection errors, timeouts before the first token, HTTP 408/409/425/429 and 5xx
  are retried ``retries`` times with exponential backoff (``backoff * 2**attempt`` s).
* :meth:`complete_many` keeps up to ``concurrency`` requests in flight.
"""
from __future__ import annotations

import asyncio
import json
import os
import ssl
import threading
import time
import urllib.parse
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence, TypeVar

import httpx

from ctxfst_tui.core.llm.base import Cancelled, Completion, ContextOverflow, EndpointError, GenerationDefaults, ModelError, TokenCallback, check_cancel

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
API_KEY_ENV = ("CTXFST_TUI_API_KEY", "OPENAI_API_KEY")
CANCEL_POLL = 0.05  # seconds between two looks at the cancel event while the server is silent

T = TypeVar("T")


class _Incomplete(Exception):
    """The stream ended without a finish reason: the server cut the answer short."""


class _Empty(Exception):
    """The server answered 200 with no event at all (llama_cpp.server does so for a streamed
    request it rejects, e.g. one past the context): ask again without streaming for the error."""


class _HTTPStatus(Exception):
    """The server answered with an error status; ``detail`` is its message, on one line."""

    def __init__(self, code: int, detail: str):
        super().__init__(f"HTTP {code}")
        self.code = code
        self.detail = detail


@dataclass
class _Answer:
    """What one exchange received: streamed pieces, or the lines of a plain JSON body."""

    chat: bool
    parts: list[str] = field(default_factory=list)
    finish: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    first: float | None = None
    plain: list[str] = field(default_factory=list)
    streamed: bool = False

    def take(self, line: str, url: str, on_token: TokenCallback | None, emitted: list[bool]) -> bool:
        """Take one line of the body; True once the stream says it is done."""
        text = line.strip()
        if not text:
            return False
        if not text.startswith("data:"):
            self.plain.append(line)  # a server that ignored stream=true
            return False
        payload = text[5:].strip()
        self.streamed = True
        if payload == "[DONE]":
            return True
        try:
            event = json.loads(payload)
        except ValueError:
            return False
        if isinstance(event.get("error"), (dict, str)):
            raise EndpointError(f"{url}: {_error_text(event['error'])}")
        if event.get("usage"):
            self.usage = event["usage"]
        for choice in event.get("choices") or []:
            piece = (choice.get("delta") or {}).get("content") if self.chat else choice.get("text")
            if piece:
                if self.first is None:
                    self.first = time.perf_counter()
                self.parts.append(piece)
                emitted[0] = True
                if on_token is not None:
                    on_token(piece)
            if choice.get("finish_reason"):
                self.finish = choice["finish_reason"]
        return False


def split_endpoint(endpoint: str, api: str | None = None) -> tuple[str, str]:
    """(base URL ending in /v1 or the given prefix, api "chat" | "completions")."""
    url = endpoint.strip().rstrip("/")
    if not url:
        raise EndpointError("no endpoint URL given (e.g. --endpoint http://127.0.0.1:8080/v1)")
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise EndpointError(f"invalid endpoint URL {endpoint!r}: expected http(s)://host:port[/v1]")
    for suffix, kind in (("/chat/completions", "chat"), ("/completions", "completions")):
        if url.endswith(suffix):
            return url[: -len(suffix)], kind
    if not parsed.path or parsed.path == "/":
        url += "/v1"
    return url, (api or "chat")


class OpenAIBackend:
    """An OpenAI-compatible ``/completions`` or ``/chat/completions`` endpoint."""

    name = "openai"

    def __init__(
        self,
        endpoint: str,
        model: str | None = None,
        *,
        api: str | None = None,
        api_key: str | None = None,
        context_size: int = 8192,
        timeout: float = 120.0,
        connect_timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 0.5,
        concurrency: int = 4,
        max_tokens: int = 256,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
        extra: dict[str, Any] | None = None,
    ):
        if api not in (None, "chat", "completions"):
            raise EndpointError(f"unknown API {api!r}: use 'chat' or 'completions'")
        self.base_url, self.api = split_endpoint(endpoint, api)
        self._model = model
        self.api_key = api_key if api_key is not None else next((os.environ[k] for k in API_KEY_ENV if os.environ.get(k)), None)
        self._context_size = int(context_size)
        self.timeout = float(timeout)
        self.connect_timeout = float(connect_timeout)
        self.retries = max(0, int(retries))
        self.backoff = float(backoff)
        self.concurrency = max(1, int(concurrency))
        self.defaults = GenerationDefaults(max_tokens, temperature, tuple(stop))
        self.extra = dict(extra or {})
        self._ssl: ssl.SSLContext | None = None

    # ------------------------------------------------------------ protocol
    @property
    def url(self) -> str:
        return f"{self.base_url}/{'chat/completions' if self.api == 'chat' else 'completions'}"

    @property
    def model(self) -> str:
        if self._model is None:
            self._model = self._first_model()
        return self._model

    @property
    def model_id(self) -> str:
        return f"{self.model}@{self.base_url}"

    @property
    def context_size(self) -> int:
        return self._context_size

    @property
    def chat(self) -> bool:
        return self.api == "chat"

    def cache_params(self) -> dict[str, Any]:
        d = self.defaults
        return {"api": self.api, "extra": self.extra, "defaults": [d.max_tokens, d.temperature, list(d.stop)]}

    def info(self) -> dict[str, Any]:
        return {"backend": self.name, "endpoint": self.url, "model": self._model, "api": self.api,
                "context_size": self._context_size, "concurrency": self.concurrency, "timeout": self.timeout,
                "retries": self.retries, "api_key": bool(self.api_key)}

    def count_tokens(self, text: str) -> int:
        """An estimate (cl100k BPE): the server's own tokenizer is not reachable through the API."""
        from ctxfst_tui.core.chunking.tokens import count_tokens

        try:
            return count_tokens(text)
        except Exception:  # pragma: no cover - no encoding available
            return max(1, len(text) // 4)

    # ------------------------------------------------------------ HTTP
    def _headers(self) -> dict[str, str]:
        h = {"Content-Type": "application/json", "Accept": "text/event-stream, application/json"}
        if self.api_key:
            h["Authorization"] = f"Bearer {self.api_key}"
        return h

    def _tls(self) -> ssl.SSLContext:
        """One TLS context for all this backend's clients: building one reads the CA bundle."""
        if self._ssl is None:
            self._ssl = httpx.create_ssl_context()
        return self._ssl

    def _first_model(self) -> str:
        url = f"{self.base_url}/models"
        try:
            resp = httpx.get(url, headers=self._headers(), timeout=self.connect_timeout, verify=self._tls(), follow_redirects=True)
        except (httpx.RequestError, OSError) as exc:
            raise EndpointError(f"cannot list the models of {self.base_url} ({_reason(exc, self.connect_timeout)}); give the model name with --model") from exc
        if resp.status_code >= 400:
            raise EndpointError(f"{url} answered HTTP {resp.status_code}; give the model name with --model")
        try:
            return str(resp.json()["data"][0]["id"])
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise EndpointError(f"cannot list the models of {self.base_url} ({_reason(exc, self.connect_timeout)}); give the model name with --model") from exc

    def _payload(self, prompt: str, max_tokens: int, stop: list[str], temperature: float, stream: bool = True) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "temperature": temperature, "stream": stream}
        if stop:
            body["stop"] = stop[:4]  # the OpenAI API accepts at most four
        if self.chat:
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
        body.update(self.extra)
        return body

    async def _receive(self, body: dict[str, Any], cancel: threading.Event | None,
                       on_token: TokenCallback | None, emitted: list[bool]) -> _Answer:
        """POST ``body`` and read the answer line by line as it arrives."""
        answer = _Answer(self.chat)
        async with httpx.AsyncClient(timeout=self.timeout, verify=self._tls(), follow_redirects=True) as client:
            async with client.stream("POST", self.url, json=body, headers=self._headers()) as resp:
                if resp.status_code >= 400:
                    raw = (await resp.aread()).decode("utf-8", "replace")
                    raise _HTTPStatus(resp.status_code, _http_detail(raw))
                async for line in resp.aiter_lines():
                    check_cancel(cancel)
                    if answer.take(line, self.url, on_token, emitted):
                        break
        return answer

    @staticmethod
    async def _until_cancelled(work: Coroutine[Any, Any, T], cancel: threading.Event | None) -> T:
        """Await ``work``; cancel it (closing its connection) as soon as ``cancel`` is set."""
        task = asyncio.ensure_future(work)
        while True:
            done, _ = await asyncio.wait({task}, timeout=None if cancel is None else CANCEL_POLL)
            if done:
                return task.result()
            if cancel is not None and cancel.is_set():
                task.cancel()
                await asyncio.wait({task})
                if not task.cancelled():
                    task.exception()  # it ended as it was cancelled: the cancel wins, its outcome is dropped
                raise Cancelled("cancelled")

    def _attempt(self, prompt: str, max_tokens: int, stop: list[str], temperature: float,
                 cancel: threading.Event | None, on_token: TokenCallback | None, emitted: list[bool],
                 stream: bool = True) -> Completion:
        t0 = time.perf_counter()
        body = self._payload(prompt, max_tokens, stop, temperature, stream)
        answer = _run(self._until_cancelled(self._receive(body, cancel, on_token, emitted), cancel))
        parts, finish, usage = answer.parts, answer.finish, answer.usage
        if answer.plain and not parts:  # non-streamed JSON answer
            try:
                event = json.loads("\n".join(answer.plain))
                choice = event["choices"][0]
                parts = [(choice.get("message") or {}).get("content") or "" if self.chat else choice.get("text") or ""]
                finish = choice.get("finish_reason") or finish
                usage = event.get("usage") or usage
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                raise EndpointError(f"{self.url} sent a response that is not an OpenAI completion") from exc
        elif not parts and not answer.streamed and not stream:
            raise EndpointError(f"{self.url} sent an empty response")
        if not answer.streamed and not answer.plain and stream:
            raise _Empty()
        if answer.streamed and not finish:
            raise _Incomplete(f"the stream ended after {len(parts)} pieces without a finish reason")
        text = "".join(parts)
        end = time.perf_counter()
        prompt_tokens = int(usage.get("prompt_tokens") or self.count_tokens(prompt))
        completion_tokens = int(usage.get("completion_tokens") or (self.count_tokens(text) if text else 0))
        return Completion(text, prompt_tokens, completion_tokens, finish or "stop", False, end - t0, (answer.first or end) - t0)

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        temperature: float | None = None,
        cancel: threading.Event | None = None,
        on_token: TokenCallback | None = None,
    ) -> Completion:
        max_tokens, temperature, stops = self.defaults.resolve(max_tokens, temperature, stop)
        last: str = ""
        for attempt in range(self.retries + 1):
            check_cancel(cancel)
            emitted = [False]
            try:
                try:
                    return self._attempt(prompt, max_tokens, stops, temperature, cancel, on_token, emitted)
                except _Empty:
                    return self._attempt(prompt, max_tokens, stops, temperature, cancel, on_token, emitted, stream=False)
            except Cancelled:
                raise
            except ModelError:
                raise
            except _Incomplete as exc:
                last = (f"the server ended the answer early ({exc}); llama_cpp.server does this to a stream when "
                        f"another request arrives unless started with --interrupt_requests False")
            except _HTTPStatus as exc:
                detail = exc.detail
                if exc.code in RETRY_STATUS and not emitted[0]:
                    last = f"HTTP {exc.code}{': ' + detail if detail else ''}"
                else:
                    low = detail.lower()
                    if exc.code in (400, 413) and ("context" in low or "too long" in low or "exceed" in low or "maximum" in low):
                        raise ContextOverflow(
                            f"context overflow at {self.url}: {detail}; lower --document-max-chars or use a model with a larger context"
                        ) from exc
                    if exc.code in (401, 403):
                        raise EndpointError(f"{self.url} refused the request (HTTP {exc.code}): set the API key in CTXFST_TUI_API_KEY or OPENAI_API_KEY") from exc
                    if exc.code == 404:
                        raise EndpointError(f"{self.url} not found (HTTP 404): check the endpoint URL and the model name {self.model!r}") from exc
                    raise EndpointError(f"{self.url} answered HTTP {exc.code}{': ' + detail if detail else ''}") from exc
            except (httpx.RequestError, OSError) as exc:
                if emitted[0]:
                    raise EndpointError(f"connection to {self.url} lost mid-answer ({_reason(exc, self.timeout)})") from exc
                last = _reason(exc, self.timeout)
            if attempt < self.retries:
                delay = self.backoff * (2 ** attempt)
                if cancel is not None:
                    if cancel.wait(delay):
                        raise Cancelled("cancelled")
                else:
                    time.sleep(delay)
        n = self.retries + 1
        raise EndpointError(f"cannot get a completion from {self.url}: {last} (after {n} attempt{'s' if n != 1 else ''})", retryable=True)

    def complete_many(self, prompts: Sequence[str], *, max_tokens: int | None = None, stop: Sequence[str] | None = None,
                      temperature: float | None = None, cancel: threading.Event | None = None,
                      concurrency: int | None = None) -> list[Completion | ModelError]:
        """Complete several prompts with up to ``concurrency`` requests in flight; a failed
        prompt's slot holds its :class:`ModelError`. Cancellation raises :class:`Cancelled`."""
        return complete_many(self, prompts, max_tokens=max_tokens, stop=stop, temperature=temperature,
                             cancel=cancel, concurrency=concurrency or self.concurrency)


def complete_many(backend: Any, prompts: Sequence[str], *, max_tokens: int | None = None, stop: Sequence[str] | None = None,
                  temperature: float | None = None, cancel: threading.Event | None = None,
                  concurrency: int = 4) -> list[Completion | ModelError]:
    """Run ``backend.complete`` on each prompt in a small thread pool, results in prompt order."""
    def one(p: str) -> Completion | ModelError:
        try:
            return backend.complete(p, max_tokens=max_tokens, stop=stop, temperature=temperature, cancel=cancel)
        except ModelError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="ctxfst-llm") as pool:
        results = list(pool.map(one, prompts))
    check_cancel(cancel)
    return results


def _run(work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` to the end on a new event loop; in a thread of its own when this one already
    runs a loop (a blocking call from async code, which asyncio.run refuses)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctxfst-openai") as pool:
        return pool.submit(asyncio.run, work).result()


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it wraps (causes, contexts, grouped exceptions), nearest first."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo += [e.__cause__, e.__context__, *getattr(e, "exceptions", ()), *(a for a in e.args if isinstance(a, BaseException))]


def _reason(exc: BaseException, timeout: float) -> str:
    """Why an exchange failed, in a few words for the user."""
    if isinstance(exc, httpx.ConnectTimeout):
        return f"timed out (no connection within {timeout:g} s)"
    if isinstance(exc, (httpx.TimeoutException, TimeoutError)):
        return f"timed out (no data for {timeout:g} s)"
    causes = list(_causes(exc))
    if any(isinstance(e, ConnectionRefusedError) for e in causes):
        return "connection refused"
    if isinstance(exc, httpx.ConnectError):  # name resolution, unreachable network, TLS: the system's words
        system = next((e for e in causes if isinstance(e, OSError) and e.errno is not None), None)
        if system is not None:
            return str(system)
    return str(exc) or type(exc).__name__


def _error_text(err: Any) -> str:
    if isinstance(err, dict):
        return str(err.get("message") or err)
    return str(err)


def _http_detail(raw: str) -> str:
    """The message in an error answer's body (OpenAI's ``error``, FastAPI's ``detail``), on one line."""
    try:
        data = json.loads(raw)
        if isinstance(data, dict):
            if "error" in data:
                return " ".join(_error_text(data["error"]).split())[:300]
            if "detail" in data:
                return " ".join(str(data["detail"]).split())[:300]
    except ValueError:
        pass
    return " ".join(raw.split())[:300]
