"""The OpenAI-compatible backend against a real local server (llama-cpp-python's own
``llama_cpp.server`` on 127.0.0.1 with the bundled model), plus its failure paths against
real sockets: a closed port, a server that never answers, HTTP 5xx/4xx answers."""
from __future__ import annotations

import http.server
import json
import socket
import threading
import time

import pytest
from real_model import MODEL_THREADS

from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.llm import CachedBackend, Cancelled, CompletionCache, ContextOverflow, EndpointError
from ctxfst_tui.core.llm.openai import OpenAIBackend, complete_many, split_endpoint
from llama_server import free_port as _free_port, llama_server

PROMPT = "Q: What is the capital of France?\nA: The capital of France is"


@pytest.fixture(scope="module")
def server(bundled_gguf):
    """A real llama_cpp.server on the bundled model (self-tested first) on a free port, stopped after the module's tests."""
    with llama_server(bundled_gguf, ["--n_ctx", "1024", "--n_threads", str(MODEL_THREADS), "--n_threads_batch", str(MODEL_THREADS),
                                             "--interrupt_requests", "False"]) as base:  # else a new request cuts the running stream short
        yield base


# ---------------------------------------------------------------- against the real server


def test_completions_endpoint_streams_a_real_answer(server):
    b = OpenAIBackend(server + "/v1/completions", retries=0)
    assert b.chat is False and b.api == "completions"
    pieces: list[str] = []
    c = b.complete(PROMPT, max_tokens=8, on_token=pieces.append)
    assert "paris" in c.text.lower()
    assert "".join(pieces) == c.text
    assert c.finish_reason in ("stop", "length") and c.completion_tokens > 0 and c.prompt_tokens > 0
    assert b.model.endswith(".gguf")  # discovered through /v1/models
    assert b.model_id.endswith("@" + server + "/v1")


def test_stop_sequences_and_determinism(server):
    b = OpenAIBackend(server + "/v1/completions", model="gemma")
    a = b.complete(PROMPT, max_tokens=16, stop=["\n"])
    again = b.complete(PROMPT, max_tokens=16, stop=["\n"])
    assert "\n" not in a.text and a.text == again.text


def test_several_requests_in_flight(server):
    b = OpenAIBackend(server + "/v1/completions", model="gemma", concurrency=3)
    prompts = [f"Q: What is {n} plus {n}?\nA:" for n in range(1, 5)]
    sequential = [b.complete(p, max_tokens=6).text for p in prompts]
    t0 = time.perf_counter()
    parallel = b.complete_many(prompts, max_tokens=6)
    assert time.perf_counter() - t0 < 60
    assert [c.text for c in parallel] == sequential


def test_chat_endpoint_answers(server):
    b = OpenAIBackend(server + "/v1/chat/completions", model="gemma")
    assert b.chat is True
    c = b.complete("Say hello.", max_tokens=8)
    assert c.finish_reason in ("stop", "length") and c.completion_tokens >= 0


def test_context_overflow_from_the_server(server):
    b = OpenAIBackend(server + "/v1/completions", model="gemma", retries=0)
    with pytest.raises(ContextOverflow) as exc:
        b.complete("word " * 1500, max_tokens=8)
    assert "--document-max-chars" in str(exc.value) and "1024" in str(exc.value)


def test_cancel_against_the_server(server):
    b = OpenAIBackend(server + "/v1/completions", model="gemma")
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    t0 = time.perf_counter()
    with pytest.raises(Cancelled):
        b.complete("1, 2, 3, 4, 5, 6, 7,", max_tokens=400, cancel=cancel)
    assert time.perf_counter() - t0 < 1.3
    # the server still answers afterwards
    assert "paris" in b.complete(PROMPT, max_tokens=8).text.lower()


def test_contextualize_through_the_server(server, tmp_path):
    from ctxfst_tui.core.contextualize.options import ContextualizeOptions
    from ctxfst_tui.core.contextualize.run import contextualize

    doc = Document.from_text(SMALL_DOC, tmp_path / "doc.md")
    backend = CachedBackend(OpenAIBackend(server + "/v1/completions", model="gemma", concurrency=2),
                            CompletionCache(tmp_path / "c.sqlite"))
    # no retry of a rejected note: the retry is the fake tests' business, a real call costs seconds
    options = ContextualizeOptions(max_tokens=80, retry=False)
    report = contextualize(doc, backend, options)
    assert report.model_calls >= 2 and report.skipped == 0
    for r in report.results:  # the 270M model may see a note rejected; nothing else may fail
        if r.status == "ok":
            assert r.note and len(r.note.splitlines()[0]) <= 600
        else:
            assert r.reason.startswith("rejected: "), r.reason
    again = contextualize(Document.from_text(SMALL_DOC, tmp_path / "doc.md"), backend, options)
    assert again.model_calls == 0 and again.notes == report.notes


SMALL_DOC = """\
---
title: "Orders service runbook"
chunks:
  - id: ops:deploy
    context: ""
  - id: ops:database
---

<Chunk id="ops:deploy">
## Deploy

Run `helm upgrade --install orders ./chart --atomic`. The release rolls back by itself when pods are not ready.
</Chunk>

<Chunk id="ops:database">
## Database

The service uses PostgreSQL through PgBouncer, with at most 40 server connections.
</Chunk>
"""


# ---------------------------------------------------------------- failure paths on real sockets


class _Handler(http.server.BaseHTTPRequestHandler):
    status = 500
    body = b'{"error": {"message": "boom"}}'
    hits = 0
    authorization: list[str | None] = []  # the Authorization header of each request

    def do_POST(self):  # noqa: N802
        type(self).hits += 1
        type(self).authorization.append(self.headers.get("Authorization"))
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):  # quiet
        pass


def _http_server(status: int, body: bytes):
    handler = type("H", (_Handler,), {"status": status, "body": body, "hits": 0, "authorization": []})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return srv, handler


def test_closed_port_is_a_clear_error_after_retries():
    port = _free_port()
    b = OpenAIBackend(f"http://127.0.0.1:{port}/v1/completions", model="m", retries=2, backoff=0.01)
    t0 = time.perf_counter()
    with pytest.raises(EndpointError) as exc:
        b.complete("hi", max_tokens=4)
    msg = str(exc.value)
    assert "connection refused" in msg and "after 3 attempts" in msg and f"127.0.0.1:{port}" in msg
    assert time.perf_counter() - t0 < 5


def test_a_server_that_never_answers_times_out():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    port = listener.getsockname()[1]
    try:
        b = OpenAIBackend(f"http://127.0.0.1:{port}/v1/completions", model="m", timeout=0.5, retries=1, backoff=0.01)
        t0 = time.perf_counter()
        with pytest.raises(EndpointError) as exc:
            b.complete("hi", max_tokens=4)
        assert "timed out" in str(exc.value) and "after 2 attempts" in str(exc.value)
        assert time.perf_counter() - t0 < 5
    finally:
        listener.close()


def test_cancel_while_waiting_for_a_silent_server():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    try:
        b = OpenAIBackend(f"http://127.0.0.1:{listener.getsockname()[1]}/v1/completions", model="m", timeout=30)
        cancel = threading.Event()
        threading.Timer(0.2, cancel.set).start()
        t0 = time.perf_counter()
        with pytest.raises(Cancelled):
            b.complete("hi", cancel=cancel)
        assert time.perf_counter() - t0 < 1.0
    finally:
        listener.close()


def test_5xx_is_retried_then_reported():
    srv, h = _http_server(503, b'{"error": {"message": "overloaded"}}')
    try:
        b = OpenAIBackend(f"http://127.0.0.1:{srv.server_port}/v1/completions", model="m", retries=2, backoff=0.01)
        with pytest.raises(EndpointError) as exc:
            b.complete("hi")
        assert h.hits == 3
        assert "HTTP 503" in str(exc.value) and "overloaded" in str(exc.value)
    finally:
        srv.shutdown()


def test_4xx_is_not_retried():
    srv, h = _http_server(401, b'{"error": {"message": "bad key"}}')
    try:
        b = OpenAIBackend(f"http://127.0.0.1:{srv.server_port}/v1", model="m", api_key="k", retries=3, backoff=0.01)
        with pytest.raises(EndpointError) as exc:
            b.complete("hi")
        assert h.hits == 1 and "API key" in str(exc.value)
    finally:
        srv.shutdown()


def test_non_streaming_json_answer_is_accepted():
    body = json.dumps({"choices": [{"text": " Paris.", "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 5, "completion_tokens": 2}}).encode()
    srv, _ = _http_server(200, body)
    try:
        c = OpenAIBackend(f"http://127.0.0.1:{srv.server_port}/v1/completions", model="m").complete("hi")
        assert c.text == " Paris." and c.completion_tokens == 2 and c.prompt_tokens == 5
    finally:
        srv.shutdown()


def test_complete_many_reports_failures_in_place():
    port = _free_port()
    b = OpenAIBackend(f"http://127.0.0.1:{port}/v1/completions", model="m", retries=0)
    results = complete_many(b, ["a", "b"], concurrency=2)
    assert all(isinstance(r, EndpointError) for r in results)


def test_endpoint_forms():
    assert split_endpoint("http://h:1") == ("http://h:1/v1", "chat")
    assert split_endpoint("http://h:1/v1/", "completions") == ("http://h:1/v1", "completions")
    assert split_endpoint("http://h:1/v1/chat/completions") == ("http://h:1/v1", "chat")
    assert split_endpoint("https://api.example.com/v1/completions") == ("https://api.example.com/v1", "completions")
    with pytest.raises(EndpointError):
        split_endpoint("localhost:8080")
    with pytest.raises(EndpointError):
        OpenAIBackend("http://h:1", api="embeddings")


def test_api_key_from_the_environment(monkeypatch):
    body = json.dumps({"choices": [{"text": " ok", "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
    srv, h = _http_server(200, body)
    try:
        url = f"http://127.0.0.1:{srv.server_port}/v1/completions"
        for name in ("CTXFST_TUI_API_KEY", "OPENAI_API_KEY"):
            monkeypatch.delenv(name, raising=False)
        without = OpenAIBackend(url, model="m")
        assert without.complete("hi").text == " ok" and without.info()["api_key"] is False
        monkeypatch.setenv("CTXFST_TUI_API_KEY", "secret")
        b = OpenAIBackend(url, model="m")
        assert b.complete("hi").text == " ok"
        assert h.authorization == [None, "Bearer secret"]  # what the server received
        assert b.info()["api_key"] is True
    finally:
        srv.shutdown()


class _StreamHandler(http.server.BaseHTTPRequestHandler):
    """Answers a completion as server-sent events: ``events`` one by one, ``pause`` seconds apart.
    ``declared`` > 0 announces that many body bytes and closes before sending them all (a lost
    connection); otherwise the body ends when the connection closes."""

    events: list[dict] = []
    pause = 0.0
    declared = 0
    hits = 0
    closed_at: list[float] = []

    def do_POST(self):  # noqa: N802
        type(self).hits += 1
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        if self.declared:
            self.send_header("Content-Length", str(self.declared))
        self.end_headers()
        try:
            for event in self.events:
                self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
                self.wfile.flush()
                time.sleep(self.pause)
        except OSError:  # the client hung up
            type(self).closed_at.append(time.perf_counter())
        self.close_connection = True

    def log_message(self, *args):  # quiet
        pass


def _stream_server(events: list[dict], pause: float = 0.0, declared: int = 0):
    handler = type("S", (_StreamHandler,), {"events": events, "pause": pause, "declared": declared,
                                            "hits": 0, "closed_at": []})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return srv, handler


def _piece(text: str, finish: str | None = None) -> dict:
    return {"choices": [{"text": text, "finish_reason": finish}]}


def test_streamed_pieces_reach_on_token_in_order():
    srv, h = _stream_server([_piece(" Par"), _piece("is"), _piece(".", "stop")])
    try:
        pieces: list[str] = []
        c = OpenAIBackend(f"http://127.0.0.1:{srv.server_port}/v1/completions", model="m").complete("hi", on_token=pieces.append)
        assert pieces == [" Par", "is", "."] and c.text == " Paris." and c.finish_reason == "stop" and h.hits == 1
    finally:
        srv.shutdown()


def test_cancel_between_tokens_of_a_slow_stream():
    srv, h = _stream_server([_piece(f" {n}") for n in range(100)], pause=0.3)
    try:
        b = OpenAIBackend(f"http://127.0.0.1:{srv.server_port}/v1/completions", model="m", timeout=30)
        cancel = threading.Event()
        pieces: list[str] = []

        def on_token(piece: str) -> None:
            pieces.append(piece)
            if len(pieces) == 2:
                threading.Timer(0.1, cancel.set).start()  # while the server is between two tokens

        t0 = time.perf_counter()
        with pytest.raises(Cancelled):
            b.complete("hi", cancel=cancel, on_token=on_token)
        assert time.perf_counter() - t0 < 2.0 and pieces == [" 0", " 1"]
        deadline = time.monotonic() + 3
        while not h.closed_at and time.monotonic() < deadline:  # the server sees the connection closed
            time.sleep(0.05)
        assert h.closed_at and h.hits == 1
    finally:
        srv.shutdown()


def test_a_connection_lost_mid_answer_is_not_retried():
    srv, h = _stream_server([_piece(" Par")], declared=10_000)
    try:
        b = OpenAIBackend(f"http://127.0.0.1:{srv.server_port}/v1/completions", model="m", retries=3, backoff=0.01)
        with pytest.raises(EndpointError) as exc:
            b.complete("hi")
        assert "lost mid-answer" in str(exc.value) and h.hits == 1
    finally:
        srv.shutdown()


def test_a_stream_without_finish_reason_is_retried_then_reported():
    srv, h = _stream_server([_piece(" Par")])
    try:
        b = OpenAIBackend(f"http://127.0.0.1:{srv.server_port}/v1/completions", model="m", retries=1, backoff=0.01)
        with pytest.raises(EndpointError) as exc:
            b.complete("hi")
        assert "ended the answer early" in str(exc.value) and "after 2 attempts" in str(exc.value) and h.hits == 2
    finally:
        srv.shutdown()


def test_an_error_event_in_the_stream_is_reported():
    srv, h = _stream_server([{"error": {"message": "model crashed"}}])
    try:
        b = OpenAIBackend(f"http://127.0.0.1:{srv.server_port}/v1/completions", model="m", retries=3, backoff=0.01)
        with pytest.raises(EndpointError) as exc:
            b.complete("hi")
        assert "model crashed" in str(exc.value) and h.hits == 1
    finally:
        srv.shutdown()


async def test_a_blocking_call_from_async_code_still_answers():
    srv, _ = _stream_server([_piece(" ok", "stop")])
    try:
        c = OpenAIBackend(f"http://127.0.0.1:{srv.server_port}/v1/completions", model="m").complete("hi")
        assert c.text == " ok"
    finally:
        srv.shutdown()


def test_the_model_is_listed_when_not_given():
    srv, _ = _http_server(200, b"{}")  # /v1/models is a GET: this handler has none
    try:
        with pytest.raises(EndpointError) as exc:
            OpenAIBackend(f"http://127.0.0.1:{srv.server_port}/v1/completions").complete("hi")
        assert "HTTP 501" in str(exc.value) and "--model" in str(exc.value)
    finally:
        srv.shutdown()
