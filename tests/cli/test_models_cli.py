"""``ctxfst-tui models``: the same list as the settings screen, printed, with real files in a
temporary home, a real server listing models on 127.0.0.1, and the config's [discovery] table."""
from __future__ import annotations

import json
import os

import pytest

from ctxfst_tui import config as cfg
from ctxfst_tui.cli import main
from model_home import isolated_model_home, models_server, write_gguf


@pytest.fixture
def home(tmp_path, monkeypatch):
    layout = isolated_model_home(tmp_path, monkeypatch)
    return layout


def write_config(text: str) -> None:
    path = cfg.config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_models_prints_each_model_with_size_template_and_where(home, tmp_path, capsys):
    shelf = tmp_path / "shelf"
    write_gguf(shelf / "shelf-chat.gguf", "Shelf", template=True, payload=3000)
    write_config(f'[discovery]\nports = false\nfolder = "{shelf}"\n')
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("Models on this machine (")

    def block(name: str) -> list[str]:
        """The three lines of one model: kind and name, facts, where."""
        i = next(n for n, line in enumerate(lines) if line[:2] in ("* ", "  ") and line[11:].startswith(name))
        return lines[i:i + 3]

    bundled = block("the bundled Gemma 3 270M")
    assert bundled[0].startswith("* bundled  ")  # nothing chosen: the bundled model
    assert bundled[1].startswith(f"{' ' * 11}253 MB · chat template: no · self-test: not run yet")
    assert bundled[2] == f"{' ' * 11}(packaged in parts; the first job assembles it)"  # a fresh home: not assembled
    hf = block("Qwen/Tiny-Instruct-GGUF/tiny-instruct-q4.gguf")
    assert hf[0] == "  gguf     Qwen/Tiny-Instruct-GGUF/tiny-instruct-q4.gguf (also same-as-hf.gguf)"
    assert home.hf_blob.stat().st_size == 64480  # the header (a 3000-token list) and 8 kB of "tensors"
    assert hf[1] == f"{' ' * 11}64 kB · chat template: yes · self-test: not run yet"
    assert hf[2] == f"{' ' * 11}~/.cache/huggingface/hub/models--Qwen--Tiny-Instruct-GGUF/snapshots/1111111/tiny-instruct-q4.gguf (Hugging Face cache)"
    assert block("lmstudio-community/Base-GGUF/base-q4.gguf")[1].split(" · ")[1] == "chat template: no"
    assert block("llama-chat:1b")[0].endswith("(also llama-chat:latest)")
    assert block("shelf-chat.gguf")[2].endswith("(configured folder)")
    broken = block("broken.gguf")
    assert "unreadable: cut short" in broken[1] and broken[2] == f"{' ' * 11}~/models/broken.gguf (~/models)"
    assert "Traceback" not in out
    assert "  configured folder   " + str(shelf) in out
    assert "Asked GET" not in out  # ports = false, no endpoint: no server asked


def test_the_current_model_is_marked_and_json_says_the_same(home, capsys):
    state, _ = cfg.load_state()
    state.model = {"source": "gguf", "model_path": str(home.lmstudio)}  # what the workbench remembered
    assert cfg.save_state(state) is None
    with models_server(["qwen2.5:7b"]) as url:
        write_config(f'[discovery]\nports = false\nendpoint = "{url}"\n')
        assert main(["models"]) == 0
        text = capsys.readouterr().out
        assert main(["models", "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
    marked = [line for line in text.splitlines() if line.startswith("* ") and not line.startswith("* the ")]
    assert marked == ["* gguf     lmstudio-community/Base-GGUF/base-q4.gguf"]
    assert "  server   qwen2.5:7b" in text and f"           {url} (configured endpoint)" in text
    assert f"Asked GET /v1/models of {url.removeprefix('http://').removesuffix('/v1')}: 1 answered." in text
    assert data["current"] == {"source": "gguf", "model_path": str(home.lmstudio)}
    current = [m for m in data["models"] if m["current"]]
    assert [m["name"] for m in current] == ["lmstudio-community/Base-GGUF/base-q4.gguf"]
    server = next(m for m in data["models"] if m["kind"] == "server")
    assert (server["served"], server["location"], server["chat_template"], server["self_test"]) == ("qwen2.5:7b", url, None, None)
    hf = next(m for m in data["models"] if m["name"].startswith("Qwen/"))
    assert (hf["size"], hf["chat_template"], hf["aliases"]) == (home.hf_blob.stat().st_size, True, ["same-as-hf.gguf"])
    assert hf["self_test"] == "not run yet"
    broken = next(m for m in data["models"] if m["name"] == "broken.gguf")
    assert broken["problem"].startswith("unreadable: cut short") and broken["self_test"] is None
    assert {p["label"] for p in data["places"]} >= {"Hugging Face cache", "LM Studio", "Ollama", "~/models"}


def test_a_bad_discovery_table_is_reported_and_the_rest_still_works(home, capsys):
    write_config('[discovery]\nports = "no"\nfolders = "x"\n')
    problems = cfg.load_config().problems
    assert len(problems) == 2 and "'ports' must be true or false" in problems[0] and "unknown key 'folders'" in problems[1]
    assert main(["models", "--no-ports"]) == 0
    out = capsys.readouterr().out
    assert "llama-chat:1b" in out and "Asked GET" not in out


def test_the_models_command_loads_no_textual(home, tmp_path):
    import subprocess
    import sys

    write_config("[discovery]\nports = false\n")
    code = "import sys; from ctxfst_tui.cli import main; main(['models']); print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ), timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "[]"
