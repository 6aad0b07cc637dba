"""A backend for any OpenAI-compatible HTTP endpoint (llama.cpp server, vLLM, Ollama, OpenAI).

Standard library only (``urllib``). Responses are streamed (server-sent events) so a
cancel event stops a call within a fraction of a second; the HTTP exchange runs in a helper
thread while the calling thread watches the cancel event and the read timeout.

* ``endpoint``: ``http://host:port``, ``.../v1``, ``.../v1/completions`` or
  ``.../v1/chat/completions``. The last two fix the API; otherwise ``api`` decides
  (``"chat"`` by default: remote servers mostly serve instruct models).
* ``api_key``: given, or read from ``CTXFST_TUI_API_KEY`` / ``OPENAI_API_KEY``.
* Retries: connection errors, timeouts before the first token, HTTP 408/409/425/429 and 5xx
  are retried ``retries`` times with exponential backoff (``backoff * 2**attempt`` s).
* :meth:`complete_many` keeps up to ``concurrency`` requests in flight.
"""
from __future__ import annotations

import json
import os
import queue
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterator, Sequence

from ctxfst_tui.core.llm.base import Cancelled, Completion, ContextOverflow, EndpointError, GenerationDefaults, ModelError, TokenCallback, check_cancel

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
API_KEY_ENV = ("CTXFST_TUI_API_KEY", "OPENAI_API_KEY")
_END = object()


class _Incomplete(Exception):
    """The stream ended without a finish reason: the server cut the answer short."""


class _Empty(Exception):
    """The server answered 200 with no event at all (llama_cpp.server does so for a streamed
    request it rejects, e.g. one past the context): ask again without streaming for the error."""


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

    def _first_model(self) -> str:
        req = urllib.request.Request(f"{self.base_url}/models", headers=self._headers())
        try:
            with urllib.request.urlopen(req, timeout=self.connect_timeout) as resp:
                data = json.loads(resp.read().decode("utf-8"))
            return str(data["data"][0]["id"])
        except urllib.error.HTTPError as exc:
            raise EndpointError(f"{self.base_url}/models answered HTTP {exc.code}; give the model name with --model") from exc
        except (urllib.error.URLError, OSError, ValueError, KeyError, IndexError) as exc:
            raise EndpointError(f"cannot list the models of {self.base_url} ({_reason(exc)}); give the model name with --model") from exc

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

    def _open(self, body: dict[str, Any], cancel: threading.Event | None) -> tuple[Any, "queue.Queue"]:
        """Start the request in a helper thread; returns (holder, queue of SSE lines / exceptions / _END)."""
        q: queue.Queue = queue.Queue()
        holder: dict[str, Any] = {}
        data = json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.url, data=data, headers=self._headers(), method="POST")

        def run() -> None:
            try:
                resp = urllib.request.urlopen(req, timeout=self.timeout)
                holder["resp"] = resp
                if holder.get("closed"):
                    resp.close()
                    return
                q.put(("status", resp.status))
                for raw in resp:
                    q.put(("line", raw))
                q.put((_END, None))
            except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
                q.put(("error", exc))

        threading.Thread(target=run, name="ctxfst-openai-request", daemon=True).start()
        return holder, q

    @staticmethod
    def _close(holder: dict[str, Any]) -> None:
        holder["closed"] = True
        resp = holder.get("resp")
        if resp is not None:
            try:
                resp.close()
            except Exception:  # pragma: no cover
                pass

    def _events(self, holder: dict, q: "queue.Queue", cancel: threading.Event | None) -> Iterator[tuple[str, Any]]:
        idle_since = time.monotonic()
        while True:
            try:
                kind, value = q.get(timeout=0.05)
            except queue.Empty:
                if cancel is not None and cancel.is_set():
                    self._close(holder)
                    raise Cancelled("cancelled")
                if time.monotonic() - idle_since > self.timeout:
                    self._close(holder)
                    raise socket.timeout(f"no data for {self.timeout:g} s")
                continue
            idle_since = time.monotonic()
            if cancel is not None and cancel.is_set():
                self._close(holder)
                raise Cancelled("cancelled")
            if kind is _END:
                return
            if kind == "error":
                raise value
            yield kind, value

    def _attempt(self, prompt: str, max_tokens: int, stop: list[str], temperature: float,
                 cancel: threading.Event | None, on_token: TokenCallback | None, emitted: list[bool],
                 stream: bool = True) -> Completion:
        t0 = time.perf_counter()
        body = self._payload(prompt, max_tokens, stop, temperature, stream)
        holder, q = self._open(body, cancel)
        parts: list[str] = []
        finish = ""
        usage: dict[str, Any] = {}
        first: float | None = None
        plain: list[bytes] = []
        streamed = False
        try:
            for kind, value in self._events(holder, q, cancel):
                if kind != "line":
                    continue
                line = value.decode("utf-8", "replace").strip()
                if not line:
                    continue
                if not line.startswith("data:"):
                    plain.append(value)  # a server that ignored stream=true
                    continue
                payload = line[5:].strip()
                streamed = True
                if payload == "[DONE]":
                    break
                try:
                    event = json.loads(payload)
                except ValueError:
                    continue
                if isinstance(event.get("error"), (dict, str)):
                    raise EndpointError(f"{self.url}: {_error_text(event['error'])}")
                if event.get("usage"):
                    usage = event["usage"]
                for choice in event.get("choices") or []:
                    piece = (choice.get("delta") or {}).get("content") if self.chat else choice.get("text")
                    if piece:
                        if first is None:
                            first = time.perf_counter()
                        parts.append(piece)
                        emitted[0] = True
                        if on_token is not None:
                            on_token(piece)
                    if choice.get("finish_reason"):
                        finish = choice["finish_reason"]
        finally:
            self._close(holder)
        if plain and not parts:  # non-streamed JSON answer
            try:
                event = json.loads(b"".join(plain).decode("utf-8"))
                choice = event["choices"][0]
                parts = [(choice.get("message") or {}).get("content") or "" if self.chat else choice.get("text") or ""]
                finish = choice.get("finish_reason") or finish
                usage = event.get("usage") or usage
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                raise EndpointError(f"{self.url} sent a response that is not an OpenAI completion") from exc
        elif not parts and not streamed and not stream:
            raise EndpointError(f"{self.url} sent an empty response")
        if not streamed and not plain and stream:
            raise _Empty()
        if streamed and not finish:
            raise _Incomplete(f"the stream ended after {len(parts)} pieces without a finish reason")
        text = "".join(parts)
        end = time.perf_counter()
        prompt_tokens = int(usage.get("prompt_tokens") or self.count_tokens(prompt))
        completion_tokens = int(usage.get("completion_tokens") or (self.count_tokens(text) if text else 0))
        return Completion(text, prompt_tokens, completion_tokens, finish or "stop", False, end - t0, (first or end) - t0)

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
            except urllib.error.HTTPError as exc:
                detail = _http_detail(exc)
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
            except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError, OSError) as exc:
                if emitted[0]:
                    raise EndpointError(f"connection to {self.url} lost mid-answer ({_reason(exc)})") from exc
                last = _reason(exc)
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


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError):
        r = exc.reason
        if isinstance(r, ConnectionRefusedError):
            return "connection refused"
        if isinstance(r, (socket.timeout, TimeoutError)):
            return "timed out"
        return str(r)
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return f"timed out ({exc})" if str(exc) else "timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    return str(exc) or type(exc).__name__


def _error_text(err: Any) -> str:
    if isinstance(err, dict):
        return str(err.get("message") or err)
    return str(err)


def _http_detail(exc: urllib.error.HTTPError) -> str:
    try:
        raw = exc.read().decode("utf-8", "replace")
    except Exception:
        return exc.reason if isinstance(exc.reason, str) else ""
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
