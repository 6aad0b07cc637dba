"""The model settings screen lists the models found on this machine; Enter picks one, its
self-test runs, and the choice is remembered.

Real files in a temporary home (GGUF headers written byte by byte, an Ollama store, a broken file),
a real HTTP server listing a model, a real port that never answers, and the real self-test path
(``probe.self_test`` running a child): the child is a script standing in for llama.cpp, which
answers for every GGUF but dies of SIGSEGV on ``mine/base-q8.gguf``. The workbench's model backend
is a factory that must never be called: picking a model loads nothing."""
from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path

import pytest
from textual.widgets import Input, OptionList, RadioButton

from ctxfst_tui.config import Config, load_state
from ctxfst_tui.core.llm import discovery, probe
from ctxfst_tui.core.llm.settings import ModelSettings
from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.screens.modals.model_settings import ModelSettingsScreen
from model_home import model_home, models_server, private_home, silent_port
from pilot import notifications, started, until

pytestmark = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama_cpp is not installed "
                                "(the self-test's verdict key names its build)")

PROBE = """\
import json, os, signal, sys
if sys.argv[-1].endswith("base-q8.gguf"):
    os.kill(os.getpid(), signal.SIGSEGV)
print(json.dumps({"ok": True, "system_info": "CPU : FAKE = 1"}))
"""
DOC = "---\ntitle: Note\nchunks:\n  - id: n:a\n---\n\n<Chunk id=\"n:a\">\nHello.\n</Chunk>\n"


def _no_model(settings):
    raise AssertionError("picking a model must not load it")


def rows(modal) -> list[str]:
    listing = modal.query_one("#found", OptionList)
    return [str(listing.get_option_at_index(i).prompt).split("\n")[0] for i in range(listing.option_count)]


async def highlight(pilot, modal, name: str) -> None:
    """Move the list's cursor to ``name`` with the arrow keys, as a user would."""
    listing = modal.query_one("#found", OptionList)
    target = next(i for i, m in enumerate(modal.found) if m.name == name)
    key = "down" if (listing.highlighted or 0) < target else "up"
    for _ in range(len(modal.found)):
        if listing.highlighted == target:
            break
        await pilot.press(key)
    assert listing.highlighted == target, (name, listing.highlighted)


async def test_enter_picks_a_found_model_runs_its_self_test_and_it_is_remembered(tmp_path, monkeypatch):
    layout = model_home(tmp_path)
    private_home(monkeypatch, layout.home)
    monkeypatch.setenv(probe.ENV_CACHE, str(tmp_path / "verdicts" / "probe.json"))
    monkeypatch.setenv("CTXFST_TUI_COMPLETION_CACHE", str(tmp_path / "completions.sqlite"))
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    monkeypatch.setenv(probe.ENV_COMMAND, f"{sys.executable} -S {script}")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "note.md").write_text(DOC)
    hf = "Qwen/Tiny-Instruct-GGUF/tiny-instruct-q4.gguf"
    # the servers' answer is held until step (1) has looked, so a busy machine cannot race the 0.4 s timeout
    looked = threading.Event()
    real_ask = discovery.ask_servers

    def held_ask(*args, **kwargs):
        answer = real_ask(*args, **kwargs)
        looked.wait(30)
        return answer
    monkeypatch.setattr(discovery, "ask_servers", held_ask)

    with models_server(["qwen2.5:7b"]) as url, silent_port() as stuck:
        # the remembered model is a server that no longer answers: discovery waits its timeout for it
        remembered = ModelSettings("endpoint", endpoint=f"http://127.0.0.1:{stuck}/v1")
        config = Config(tmp_path / "config.toml", watch=False, discovery={"ports": False, "endpoint": url})
        app = WorkbenchApp(folder, backend_factory=_no_model, model_settings=remembered, config=config)
        async with app.run_test(size=(100, 40)) as pilot:
            await started(app, pilot)
            seen = notifications(app, monkeypatch)
            await pilot.press("ctrl+o")
            await pilot.pause()
            modal = app.screen
            assert isinstance(modal, ModelSettingsScreen)
            status = lambda: str(modal.query_one("#found-status").render())  # noqa: E731
            # (1) the screen is up and answers keys while discovery still waits for the silent server
            assert status().startswith("Looking for models"), status()
            assert modal.query_one("#found", OptionList).has_focus
            looked.set()
            await until(pilot, lambda: status().startswith("Found"), timeout=10)
            listing = modal.query_one("#found", OptionList)
            assert rows(modal) == [
                "  the bundled Gemma 3 270M", f"  {hf}", "  lmstudio-community/Base-GGUF/base-q4.gguf",
                "  gone:latest", "  llama-chat:1b", "  broken.gguf", "  garbage.gguf", "  mine/base-q8.gguf",
                "  qwen2.5:7b", f"● http://127.0.0.1:{stuck}/v1"]  # the current one, marked, says it is not answering
            second = lambda name: str(listing.get_option_at_index(  # noqa: E731
                next(i for i, m in enumerate(modal.found) if m.name == name)).prompt).split("\n")[1].strip()
            assert second(hf) == "64 kB · chat template · Hugging Face cache"
            assert second("lmstudio-community/Base-GGUF/base-q4.gguf").endswith("no chat template · LM Studio")
            assert second("qwen2.5:7b") == f"{url} · configured endpoint"
            assert second(f"http://127.0.0.1:{stuck}/v1") == \
                f"http://127.0.0.1:{stuck}/v1 · not answering: timed out (no data for 0.4 s) · current endpoint"
            disabled = [m.name for i, m in enumerate(modal.found) if listing.get_option_at_index(i).disabled]
            assert disabled == ["gone:latest", "broken.gguf", "garbage.gguf", f"http://127.0.0.1:{stuck}/v1"]
            assert second("broken.gguf").startswith("unreadable: cut short")

            # (2) Enter on a GGUF whose self-test child dies: the form has it, the screen stays and says why
            await highlight(pilot, modal, "mine/base-q8.gguf")
            await pilot.press("enter")
            await until(pilot, lambda: modal.trying is None and "did not pass" in status(), timeout=30)
            assert modal.query_one("#source-gguf", RadioButton).value
            assert modal.query_one("#model-path", Input).value == str(layout.mine)
            assert status() == ("mine/base-q8.gguf did not pass: llama.cpp crashed (SIGSEGV) running base-q8.gguf on this CPU: "
                                "rebuild with `make rebuild-llama`, or use --endpoint URL — pick another, or Use takes it anyway.")
            assert app.screen is modal and app.models.settings == remembered

            # (3) Enter on the Hugging Face model: its self-test passes, the screen closes, the model is used
            await highlight(pilot, modal, hf)
            await pilot.press("enter")
            await until(pilot, lambda: app.screen is not modal, timeout=30)
            assert app.models.settings == ModelSettings("gguf", model_path=str(layout.hf_snapshot))
            assert any(m.startswith(f"{hf}: self-test ok (tested ") for t, m, _ in seen if t == "Model tested"), seen
            assert [t for t, _, _ in seen] == ["Model tested", "Model settings"], seen
            kept = {Path(v.model).name: v.outcome for v in probe.kept_verdicts().values()}
            assert kept == {"base-q8.gguf": "crashed", "tiny-instruct-q4.gguf": "ok"}
            assert not app.models.created

            # (4) again: the new choice is marked, its kept verdict shown; Enter on the served model uses it
            await pilot.press("ctrl+o")
            await pilot.pause()
            modal = app.screen
            listing = modal.query_one("#found", OptionList)
            await until(pilot, lambda: modal.found and "self-test ok" in second(hf), timeout=20)
            assert rows(modal)[1] == f"● {hf}" and len(rows(modal)) == 9  # the silent server is no longer asked
            assert second("mine/base-q8.gguf").endswith("self-test crashed (SIGSEGV) · ~/models")
            assert listing.highlighted == 1  # the cursor starts on the current model
            await highlight(pilot, modal, "qwen2.5:7b")
            await pilot.press("enter")
            await until(pilot, lambda: app.screen is not modal, timeout=10)
            assert app.models.settings == ModelSettings("endpoint", endpoint=url, model="qwen2.5:7b")
            await pilot.press("q")
        # (5) remembered: the state written on exit, and the next start uses it
        state, problems = load_state()
        assert problems == [] and state.model == {"source": "endpoint", "endpoint": url, "model": "qwen2.5:7b"}
        again = WorkbenchApp(folder, backend_factory=_no_model, config=Config(tmp_path / "config.toml", watch=False))
        assert again.models.settings == ModelSettings("endpoint", endpoint=url, model="qwen2.5:7b")
