"""The GGUF and endpoint embedders: the bundled Gemma GGUF self-tested in a child then embedding
in-process, a real ``llama_cpp.server`` with embeddings on, and a small fake server in a thread for
what a real one will not do on demand (503 then success, a 4xx, slow answers to count requests in flight)."""
from __future__ import annotations

import hashlib
import http.server
import json
import threading
import time

import numpy as np
import pytest
from real_model import MODEL_THREADS

from ctxfst_tui.cli import main
from ctxfst_tui.core.retrieval.bundled_embedder import EmbedderUnavailable
from ctxfst_tui.core.retrieval.embedders import EndpointEmbedder, EndpointOptions
from llama_server import llama_server

NOTES = """---
title: Languages
entities:
  - id: entity:javascript
    name: JavaScript
    type: skill
    aliases: [JS]
  - id: entity:rust
    name: Rust
    type: skill
chunks:
  - id: lang:js
    entities: [entity:javascript]
  - id: lang:rust
    entities: [entity:rust]
  - id: lang:garden
    entities: []
---
# Languages

<Chunk id="lang:js">
JavaScript runs in the browser and JS code handles clicks on web pages.
</Chunk>

<Chunk id="lang:rust">
Rust checks ownership and borrowing at compile time, so memory errors are caught early.
</Chunk>

<Chunk id="lang:garden">
Tomatoes need sun, water every morning and a stake to climb.
</Chunk>
"""


@pytest.fixture
def notes(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "langs.ctxfst.md").write_text(NOTES, encoding="utf-8")
    return folder


def _gguf():
    from ctxfst_tui.core.llm.bundled import bundled_model_path
    from real_model import trusted

    return trusted(bundled_model_path())


# ---------------------------------------------------------------- gguf:FILE


@pytest.mark.model  # the bundled GGUF, loaded for real
def test_a_gguf_embeds_after_its_own_self_test_and_an_index_refuses_another_embedder(notes, capsys):
    from ctxfst_tui.core.llm import probe

    model = _gguf()
    assert main(["index", str(notes), "--embed", f"gguf:{model}"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("indexed 3 chunks (3 embedded")
    kept = probe.kept_verdicts()  # the embedding verdict is kept apart from the completion one
    assert kept[probe.verdict_key(model, mode=probe.EMBEDDING)].outcome == "ok"
    assert probe.verdict_key(model, mode=probe.EMBEDDING) != probe.verdict_key(model)

    assert main(["query", str(notes), "Tomatoes need sun and water", "--embed", f"gguf:{model}", "--mode", "vector",
                 "--json", "-k", "3", "--no-translate"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["results"][0]["chunk_id"] == "lang:garden"
    assert set(answer["results"][0]["signals"]) == {"vector"}

    # without --embed: the GGUF the index recorded (its path is in the index's meta)
    assert main(["query", str(notes), "Tomatoes need sun and water", "--mode", "vector", "--json", "-k", "1",
                 "--no-translate"]) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["chunk_id"] == "lang:garden"
    assert main(["query", str(notes), "Tomatoes", "--mode", "vector", "--embed", "bundled", "--no-translate"]) == 2
    err = capsys.readouterr().err.strip()
    assert "was indexed with gguf:gemma-3-270m" in err and len(err.splitlines()) == 1


def test_a_missing_gguf_is_one_line(notes, capsys):
    assert main(["index", str(notes), "--embed", f"gguf:{notes / 'none.gguf'}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no such embedding model file" in err and len(err.splitlines()) == 1


# ---------------------------------------------------------------- endpoint: a real llama_cpp.server


@pytest.fixture(scope="module")
def embedding_server():
    from ctxfst_tui.core.llm.bundled import bundled_model_path

    with llama_server(bundled_model_path(), ["--embedding", "true", "--n_ctx", "512", "--n_threads", str(MODEL_THREADS), "--n_threads_batch", str(MODEL_THREADS)],
                      ready_within=180) as base:
        yield base


def test_index_and_query_through_a_real_embedding_server(embedding_server, notes, capsys):
    url = embedding_server + "/v1"
    assert main(["index", str(notes), "--embed", "endpoint", "--endpoint", url]) == 0
    assert capsys.readouterr().out.startswith("indexed 3 chunks (3 embedded")
    # the index recorded the server: query finds it again without being told
    question = "Tomatoes need sun, water every morning and a stake to climb."  # a chunk's own words: no model doubt
    assert main(["query", str(notes), question, "--mode", "vector", "--json", "-k", "3", "--no-translate"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["results"][0]["chunk_id"] == "lang:garden" and answer["results"][0]["score"] > 0.95


def test_batches_in_flight_come_back_in_order(embedding_server):
    texts = [f"note {i}: {w}" for i, w in enumerate(["tomato", "rust", "browser", "memory", "garden", "click", "sun"])]
    embedder = EndpointEmbedder(EndpointOptions(url=embedding_server, batch_size=2, in_flight=3, timeout=120))
    # Gemma has no pooling: the server answers per token, and texts sharing a request would see each other
    assert embedder.per_token
    seen: list[int] = []
    got = embedder.embed_passages(texts, progress=lambda done, total: seen.append(done))
    assert got.shape == (7, embedder.dim) and len(seen) == 7 and seen[-1] == 7  # one text per request
    one_by_one = np.stack([embedder.embed_query(t) for t in texts])
    assert np.allclose(got, one_by_one, atol=1e-4)  # each answer landed in its own row


# ---------------------------------------------------------------- endpoint: a fake server for failures


def _vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [b / 255.0 + 0.01 for b in digest[:8]]


class _Fake(http.server.BaseHTTPRequestHandler):
    fail_first = 0          # answer this many requests with ``fail_status``
    fail_status = 503
    delay = 0.0
    hits = 0
    active = 0
    most_active = 0
    lock = threading.Lock()

    def do_POST(self):  # noqa: N802
        cls = type(self)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        with cls.lock:
            cls.hits += 1
            n = cls.hits
            cls.active += 1
            cls.most_active = max(cls.most_active, cls.active)
        try:
            time.sleep(cls.delay)
            if n <= cls.fail_first:
                status, answer = cls.fail_status, {"error": {"message": f"status {cls.fail_status} on purpose"}}
            else:
                status = 200
                answer = {"data": [{"index": i, "embedding": _vector(t)} for i, t in enumerate(body["input"])]}
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        finally:
            with cls.lock:
                cls.active -= 1

    def log_message(self, *args):
        pass


@pytest.fixture
def fake():
    servers = []

    def start(**attrs):
        handler = type("H", (_Fake,), {"hits": 0, "active": 0, "most_active": 0, "lock": threading.Lock(), **attrs})
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}/v1", handler

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def test_several_requests_are_in_flight(fake):
    url, handler = fake(delay=0.3)
    embedder = EndpointEmbedder(EndpointOptions(url=url, batch_size=2, in_flight=4))
    texts = [f"text {i}" for i in range(16)]
    t0 = time.perf_counter()
    got = embedder.embed_passages(texts)
    assert not embedder.per_token and handler.hits == 1 + 8 and handler.most_active >= 3  # the dimension probe, then 8 batches, 4 at a time
    assert time.perf_counter() - t0 < 8 * 0.3  # less than one after another
    want = np.asarray([_vector(t) for t in texts], dtype=np.float32)
    assert np.allclose(got, want / np.linalg.norm(want, axis=1, keepdims=True))


def test_a_503_is_retried(fake):
    url, handler = fake(fail_first=2, fail_status=503)
    embedder = EndpointEmbedder(EndpointOptions(url=url, retries=3))
    assert embedder.dim == 8 and handler.hits == 3


def test_a_4xx_is_reported_at_once_as_one_line(fake, notes, capsys):
    url, handler = fake(fail_first=100, fail_status=400)
    with pytest.raises(EmbedderUnavailable, match="HTTP 400"):
        EndpointEmbedder(EndpointOptions(url=url, retries=3))
    assert handler.hits == 1
    assert main(["index", str(notes), "--embed", "endpoint", "--endpoint", url]) == 2
    err = capsys.readouterr().err.strip()
    assert "HTTP 400" in err and "status 400 on purpose" in err and len(err.splitlines()) == 1
    assert handler.hits == 2 and not (notes / ".ctxfst-index").exists()
