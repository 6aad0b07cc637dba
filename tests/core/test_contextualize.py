"""Contextualize: notes written into chunk contexts with minimal diffs, the quality gate and its
retry, failure reporting, fail-fast, templates, truncation, progress, cancel, the cache, and a
real run on the bundled model."""
from __future__ import annotations

import difflib
import threading
import time
from pathlib import Path

import pytest
from real_model import MODEL_THREADS

from ctxfst_tui.core.contextualize.material import document_window
from ctxfst_tui.core.contextualize.options import ContextualizeError, ContextualizeOptions
from ctxfst_tui.cli.contextualize_report import format_report
from ctxfst_tui.core.contextualize.run import apply_notes, contextualize, generate_notes
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.workspace.undo import UndoStack
from ctxfst_tui.core.workspace.workspace import Workspace
from ctxfst_tui.core.llm import CachedBackend, CompletionCache, ContextOverflow, ModelError
from ctxfst_tui.core.format.validate import has_errors, validate
from fakes import RUNBOOK_NOTES, NotesBackend, chunk_of

DOC = """\
---
title: "Orders service runbook"
# comments survive
chunks:
  - id: ops:deploy
    tags: [Deploy]
    context: ""
  - id: ops:database   # the database part
    tags: [Database]
  - id: ops:cache
    tags: [Cache]
    context: "Already written by hand"
---

# Orders service runbook

<Chunk id="ops:deploy">
## Deploy

Run `helm upgrade --install orders ./chart --atomic`. The release rolls back by itself when pods are not ready.
</Chunk>

<Chunk id="ops:database">
## Database

The service uses PostgreSQL through PgBouncer, with at most 40 server connections.
</Chunk>

<Chunk id="ops:cache">
## Cache

Sessions live in Redis with the `allkeys-lru` eviction policy.
</Chunk>
"""


def _doc(tmp_path: Path | None = None) -> Document:
    return Document.from_text(DOC, (tmp_path / "runbook.md") if tmp_path else None)


def _changed_lines(before: str, after: str) -> list[str]:
    return [ln for ln in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
            if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]


# ---------------------------------------------------------------- writing


def test_notes_go_into_context_with_a_minimal_diff():
    doc = _doc()
    report = contextualize(doc, NotesBackend())
    assert [r.status for r in report.results] == ["ok", "ok", "ok"]
    ctx = {c.id: c.data.get("context") for c in doc.chunks}
    assert ctx["ops:deploy"].startswith('Part of "Orders service runbook" (Deploy), about the deployment')
    assert "\nTerms: " in ctx["ops:deploy"] and "--atomic" in ctx["ops:deploy"]
    assert "PgBouncer" in ctx["ops:database"].split("Terms:")[1]
    changed = _changed_lines(DOC, doc.text)
    # only context lines change: two replaced, one inserted (ops:database had none)
    assert all("context:" in ln for ln in changed), changed
    assert len([ln for ln in changed if ln.startswith("-")]) == 2
    assert "# comments survive" in doc.text and "# the database part" in doc.text
    assert not has_errors(validate(doc))
    assert report.undo is not None and report.undo.op == "contextualize"


def test_undo_and_redo_in_a_workspace(tmp_path):
    doc = _doc(tmp_path)
    ws = Workspace([doc])
    stack = UndoStack()
    report = contextualize(doc, NotesBackend(), doc_index=0)
    stack.push(report.undo)
    after = doc.text
    stack.undo(ws)
    assert doc.text == DOC
    stack.redo(ws)
    assert doc.text == after


def test_skip_present_keeps_hand_written_contexts():
    doc = _doc()
    fake = NotesBackend()
    report = contextualize(doc, fake, ContextualizeOptions(skip_present=True))
    status = {r.chunk_id: (r.status, r.reason) for r in report.results}
    assert status["ops:cache"] == ("skipped", "already has a context (--skip-present)")
    assert status["ops:deploy"][0] == "ok"  # an empty context is not "present"
    assert fake.calls == 2
    assert doc.entry_by_id("chunks", "ops:cache").data["context"] == "Already written by hand"


def test_dry_run_changes_nothing_and_shows_the_diff():
    doc = _doc()
    report = contextualize(doc, NotesBackend(), ContextualizeOptions(dry_run=True))
    assert doc.text == DOC and report.undo is None
    assert "+    context: " in report.diff and report.ok == 3


def test_generate_then_apply_separately():
    doc = _doc()
    report = generate_notes(doc, NotesBackend())
    assert doc.text == DOC
    record = apply_notes(doc, {"ops:deploy": "A note.\nTerms: x"})
    assert doc.entry_by_id("chunks", "ops:deploy").data["context"] == "A note.\nTerms: x"
    assert len(record.changes) == 1 and report.ok == 3


# ---------------------------------------------------------------- the quality gate


@pytest.mark.parametrize("bad, why", [
    ("", "empty note"),
    (" \n\n", "empty note"),
    (" the service uses PostgreSQL through PgBouncer, with at most 40 server connections.", "echoes the chunk"),
    (" Part of \"Billing API guide\" (Rate limits), about the rate limit for API clients.", "copies the prompt's examples"),
    (" Document: Orders\nChunk: x", "echoes the prompt's format"),
    (" the the the the the the the the the the the the the the the the the", "repeats itself"),
    (" " + "connections " * 200, "too long"),
])
def test_bad_notes_are_rejected_retried_then_reported(bad, why):
    fake = NotesBackend(lambda prompt, n: bad if chunk_of(prompt) == "ops:database" else RUNBOOK_NOTES[chunk_of(prompt)])
    doc = _doc()
    report = contextualize(doc, fake)
    r = {x.chunk_id: x for x in report.results}["ops:database"]
    assert r.status == "failed" and r.attempts == 2 and why in r.reason, r.reason
    assert r.reason.startswith("rejected: ") and "; then " in r.reason
    assert fake.per_chunk["ops:database"] == 2
    assert "context" not in doc.entry_by_id("chunks", "ops:database").data  # left as it was
    assert report.ok == 2 and report.failed == 1  # the others continued


def test_the_retry_uses_a_tighter_prompt_and_can_succeed():
    def answer(prompt, n):
        cid = chunk_of(prompt)
        if cid == "ops:deploy" and n == 1:
            return " Run `helm upgrade --install orders ./chart --atomic`. The release rolls back by itself when pods are not ready."
        return RUNBOOK_NOTES[cid]

    fake = NotesBackend(answer)
    report = contextualize(_doc(), fake)
    r = report.results[0]
    assert r.status == "ok" and r.attempts == 2 and "retried once with a tighter prompt" in r.reason
    first, second = [p for p in fake.prompts if chunk_of(p) == "ops:deploy"]
    assert len(second) < len(first)  # one example instead of three


def test_made_up_terms_are_dropped_and_exact_terms_added():
    fake = NotesBackend(lambda p, n: " the session cache. It covers the Redis eviction policy.\nTerms: Memcached; allkeys-; Redis; --check; data directory")
    doc = _doc()
    contextualize(doc, fake, ContextualizeOptions(chunk_ids=["ops:cache"]))
    note = doc.entry_by_id("chunks", "ops:cache").data["context"]
    terms = note.split("\nTerms: ")[1].split("; ")
    assert "Redis" in terms and "allkeys-lru" in terms
    assert not {"Memcached", "allkeys-", "--check", "data directory"} & set(terms)


def test_later_sentences_that_drift_are_dropped():
    fake = NotesBackend(lambda p, n: " the session cache. It covers the Redis eviction policy. It helps when a client sends more than "
                             "100 requests a minute and has to wait before retrying. It helps when a client sends more.")
    doc = _doc()
    report = contextualize(doc, fake, ContextualizeOptions(chunk_ids=["ops:cache"]))
    note = report.results[0].note
    assert note.startswith('Part of "Orders service runbook" (Cache), about the session cache. It covers the Redis eviction policy.')
    assert "100 requests" not in note


def test_length_limit_holds():
    long = " the cache. " + " ".join(f"It covers the Redis policy number {i}." for i in range(20))
    report = contextualize(_doc(), NotesBackend(lambda p, n: long), ContextualizeOptions(chunk_ids=["ops:cache"], max_note_chars=200))
    note = report.results[0].note
    assert len(note.split("\n")[0]) <= 200


# ---------------------------------------------------------------- failures


def test_a_model_error_is_reported_and_the_others_continue():
    fake = NotesBackend(lambda p, n: ModelError("llama.cpp failed: boom") if chunk_of(p) == "ops:deploy" else RUNBOOK_NOTES[chunk_of(p)])
    report = contextualize(_doc(), fake)
    assert [r.status for r in report.results] == ["failed", "ok", "ok"]
    assert report.results[0].reason == "llama.cpp failed: boom"
    assert "1 failed" in report.summary() and "FAILED  ops:deploy (llama.cpp failed: boom)" in format_report(report)


def test_fail_fast_stops_at_the_first_failure():
    fake = NotesBackend(lambda p, n: ContextOverflow("context overflow: the prompt is 900 tokens ... (--document-max-chars)"))
    report = contextualize(_doc(), fake, ContextualizeOptions(fail_fast=True))
    assert [r.status for r in report.results] == ["failed", "skipped", "skipped"]
    assert fake.calls == 1
    assert "--fail-fast" in report.stopped and "--document-max-chars" in report.results[0].reason
    assert report.results[1].reason.startswith("not run")


def test_fail_fast_with_several_in_flight():
    fake = NotesBackend(lambda p, n: ModelError("down") if chunk_of(p) == "ops:deploy" else RUNBOOK_NOTES[chunk_of(p)], delay=0.05, concurrency=3)
    report = contextualize(_doc(), fake, ContextualizeOptions(fail_fast=True))
    assert report.results[0].status == "failed" and report.stopped


def test_a_missing_model_fails_every_chunk_with_one_clear_message(tmp_path):
    from ctxfst_tui.core.llm.llama import LlamaBackend

    report = contextualize(_doc(), LlamaBackend(tmp_path / "missing.gguf"))
    assert report.failed == 3
    assert all("model file not found" in r.reason for r in report.results)


def test_a_chunk_without_body_is_reported():
    text = DOC.replace('<Chunk id="ops:cache">', '<Chunk id="ops:other">')
    report = contextualize(Document.from_text(text), NotesBackend())
    r = {x.chunk_id: x for x in report.results}["ops:cache"]
    assert r.status == "failed" and "no <Chunk>" in r.reason


def test_unreadable_frontmatter_is_refused():
    with pytest.raises(ContextualizeError):
        contextualize(Document.from_text("---\ntitle: [oops\n---\nbody\n"), NotesBackend())


# ---------------------------------------------------------------- prompt options


def test_template_placeholders(tmp_path):
    tpl = tmp_path / "t.txt"
    tpl.write_text("T={title}\nH={heading}\nB={breadcrumb}\nC={chunk}\nD={document}\nJSON {\"keep\": 1} {unknown}\nNote:", "utf-8")
    fake = NotesBackend(lambda p, n: "This chunk explains how the orders service is deployed with Helm and rolled back.\nTerms: --atomic")
    report = contextualize(_doc(), fake, ContextualizeOptions(template=tpl, chunk_ids=["ops:deploy"]))
    p = fake.prompts[0]
    assert p.startswith("T=Orders service runbook\nH=Deploy\nB=Orders service runbook > Deploy\nC=## Deploy")
    assert "D=# Orders service runbook" in p and '<Chunk' not in p and "title:" not in p
    assert 'JSON {"keep": 1} {unknown}' in p
    assert report.results[0].status == "ok"
    assert report.results[0].note.startswith("This chunk explains how the orders service is deployed")


def test_bad_templates(tmp_path):
    with pytest.raises(ContextualizeError, match="cannot read the template"):
        contextualize(_doc(), NotesBackend(), ContextualizeOptions(template=tmp_path / "missing.txt"))
    bad = tmp_path / "bad.txt"
    bad.write_text("no placeholder for the chunk: {document}", "utf-8")
    with pytest.raises(ContextualizeError, match=r"\{chunk\}"):
        contextualize(_doc(), NotesBackend(), ContextualizeOptions(template=bad))


def test_document_max_chars_cuts_around_the_chunk():
    filler = "\n\n".join(f"Paragraph {i} about something else entirely." for i in range(300))
    text = DOC.replace("# Orders service runbook\n", "# Orders service runbook\n\n" + filler + "\n")
    text = text.replace("</Chunk>\n\n<Chunk id=\"ops:cache\">", "</Chunk>\n\n" + filler + "\n\n<Chunk id=\"ops:cache\">")
    fake = NotesBackend(lambda p, n: "This chunk is about the database of the orders service and its connection limit.\nTerms: PgBouncer")
    tpl = "{document}\n---\n{chunk}"
    contextualize(Document.from_text(text), fake, ContextualizeOptions(template_text=tpl, document_max_chars=1000, chunk_ids=["ops:database"]))
    doc_part = fake.prompts[0].split("\n---\n")[0]
    assert len(doc_part) <= 1000 + 20
    assert "PgBouncer" in doc_part and doc_part.startswith("[...]") and doc_part.endswith("[...]")


def test_document_window_edges():
    body = "abcdefghij" * 10
    assert document_window(body, 0, 10, 1000) == body
    w = document_window(body, 90, 100, 30)
    assert w.startswith("[...]") and w.endswith("j") and len(w) <= 30 + 6


def test_instruct_style_for_chat_backends():
    fake = NotesBackend(lambda p, n: "The orders service runbook explains deployment with Helm. The release rolls back automatically.\nTerms: Helm; --atomic")
    fake.chat = True
    report = contextualize(_doc(), fake, ContextualizeOptions(chunk_ids=["ops:deploy"]))
    assert "<document>" in fake.prompts[0] and "Terms:" in fake.prompts[0]
    assert report.results[0].note.startswith("The orders service runbook explains deployment with Helm.")


# ---------------------------------------------------------------- progress, cancel, cache, concurrency


def test_progress_reports_each_chunk():
    seen = []
    contextualize(_doc(), NotesBackend(), progress=seen.append)
    assert [(p.index, p.total, p.chunk_id, p.status) for p in seen] == [
        (1, 3, "ops:deploy", "ok"), (2, 3, "ops:database", "ok"), (3, 3, "ops:cache", "ok")]
    assert seen[-1].elapsed > 0 and seen[-1].tokens_per_second > 0 and seen[-1].model_calls == 3


def test_cancel_mid_run_with_a_slow_backend():
    cancel = threading.Event()
    fake = NotesBackend(delay=2.0)
    threading.Timer(0.3, cancel.set).start()
    t0 = time.perf_counter()
    doc = _doc()
    report = contextualize(doc, fake, cancel=cancel)
    assert time.perf_counter() - t0 < 1.0
    assert report.cancelled and [r.status for r in report.results] == ["skipped"] * 3
    assert all(r.reason == "cancelled" for r in report.results)
    assert doc.text == DOC


def test_cancel_after_the_first_chunk_keeps_its_note():
    cancel = threading.Event()
    doc = _doc()
    report = contextualize(doc, NotesBackend(delay=0.05), progress=lambda p: cancel.set(), cancel=cancel)
    assert [r.status for r in report.results] == ["ok", "skipped", "skipped"] and report.cancelled
    assert "(cancelled)" in report.summary()
    assert "about the deployment" in doc.entry_by_id("chunks", "ops:deploy").data["context"]


def test_second_run_makes_no_model_call(tmp_path):
    fake = NotesBackend()
    backend = CachedBackend(fake, CompletionCache(tmp_path / "c.sqlite"))
    first = contextualize(_doc(), backend)
    second = contextualize(_doc(), backend)
    assert first.model_calls == 3 and fake.calls == 3
    assert second.model_calls == 0 and second.cache_hits == 3 and fake.calls == 3
    assert second.notes == first.notes and all(r.cached for r in second.results)


def test_several_chunks_in_flight_keep_document_order():
    fake = NotesBackend(delay=0.2, concurrency=3)
    t0 = time.perf_counter()
    report = contextualize(_doc(), fake)
    assert time.perf_counter() - t0 < 0.55  # three at once, not one after another
    assert [r.chunk_id for r in report.results] == ["ops:deploy", "ops:database", "ops:cache"]
    assert report.ok == 3


# ---------------------------------------------------------------- the real bundled model


@pytest.fixture
def real_backend(bundled_llama, tmp_path):
    """The session's in-process bundled model (self-tested first) behind a fresh completion cache."""
    return CachedBackend(bundled_llama, CompletionCache(tmp_path / "completions.sqlite"))


@pytest.mark.timeout(900)  # the default 300 s was reached on two cores shared at load 7 (measured)
def test_real_model_contextualizes_a_small_document(real_backend, tmp_path):
    doc = _doc(tmp_path)
    opts = ContextualizeOptions(max_tokens=100)
    report = contextualize(doc, real_backend, opts)
    # the 270M model is weak: the gate may reject a chunk's notes, but never lets garbage through
    assert report.ok >= 1, format_report(report, verbose=True)
    assert report.model_calls >= 3
    bodies = {bc.id: bc.content for bc in doc.body_chunks}
    for r in report.results:
        if r.status == "failed":
            assert r.reason.startswith("rejected: ") and r.attempts == 2 and r.rejected_texts
            continue
        assert r.status == "ok" and r.note, r
        prose = r.note.split("\nTerms:")[0]
        assert len(prose) <= opts.max_note_chars and len(prose.split()) >= 6
        assert prose.startswith('Part of "Orders service runbook"')
        assert prose not in bodies[r.chunk_id]  # not an echo
        assert doc.entry_by_id("chunks", r.chunk_id).data["context"] == r.note
    assert not has_errors(validate(doc))
    # a second run on the unchanged document is served by the cache
    again = contextualize(_doc(tmp_path), real_backend, opts)
    assert again.model_calls == 0 and again.cache_hits == report.model_calls
    assert again.notes == report.notes and [r.status for r in again.results] == [r.status for r in report.results]


def test_real_model_context_overflow_is_reported(bundled_gguf, model_hashes):
    from ctxfst_tui.core.llm.llama import LlamaBackend

    llama = LlamaBackend(bundled_gguf, n_ctx=256, n_threads=MODEL_THREADS, hash_cache=model_hashes)
    report = contextualize(_doc(), llama, ContextualizeOptions(chunk_ids=["ops:deploy"], fail_fast=True))
    r = report.results[0]
    assert r.status == "failed" and "context overflow" in r.reason and "--document-max-chars" in r.reason
    llama.close()
