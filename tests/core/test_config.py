"""config.toml and state.json: defaults, good and broken files (never fatal), atomic state writes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxfst_tui import config as cfg
from ctxfst_tui.config import (
    Config,
    State,
    keymap_problems,
    load_config,
    load_state,
    save_state,
    write_default_config,
)

BINDINGS = [("save", "ctrl+s", "Save"), ("undo", "u,ctrl+z", "Undo"), ("tree.open", "enter", "Open")]


@pytest.fixture(autouse=True)
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Never read or write the real user's files."""
    monkeypatch.setenv(cfg.CONFIG_ENV, str(tmp_path / "config"))
    monkeypatch.setenv(cfg.STATE_ENV, str(tmp_path / "state"))
    return tmp_path / "config", tmp_path / "state"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- where


def test_env_overrides_the_platform_dirs(dirs: tuple[Path, Path]) -> None:
    assert cfg.config_path() == dirs[0] / "config.toml"
    assert cfg.state_path() == dirs[1] / "state.json"


def test_without_env_the_platform_dirs_are_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cfg.CONFIG_ENV)
    monkeypatch.delenv(cfg.STATE_ENV)
    assert cfg.config_path().parent.name == "ctxfst-tui"
    assert cfg.state_path().parent.name == "ctxfst-tui"


# ---------------------------------------------------------------- config.toml


def test_missing_config_gives_the_defaults_silently() -> None:
    config = load_config()
    assert config == Config(cfg.config_path())
    assert (config.theme, config.keymap, config.model, config.layout, config.watch, config.problems) == (
        None, {}, {}, {}, True, [])


def test_a_good_config() -> None:
    write(cfg.config_path(), """\
theme = "ctxfst-light"

[keys]
save = "ctrl+s, f2"
"tree.open" = "o"

[model]
source = "endpoint"
endpoint = "http://127.0.0.1:8080/v1"
model = "qwen"
n_ctx = 8192

[layout]
tab = "chunks"
tree_width = 40

[watch]
enabled = false
""")
    config = load_config()
    assert config.problems == []
    assert config.theme == "ctxfst-light"
    assert config.keymap == {"save": "ctrl+s,f2", "tree.open": "o"}
    assert config.model == {"source": "endpoint", "endpoint": "http://127.0.0.1:8080/v1", "model": "qwen", "n_ctx": 8192}
    assert config.layout == {"tab": "chunks", "tree_width": 40}
    assert config.watch is False


def test_model_table_matches_model_settings() -> None:
    from ctxfst_tui.core.llm.settings import ModelSettings

    write(cfg.config_path(), '[model]\nsource = "gguf"\nmodel_path = "/m.gguf"\nn_threads = 2\n')
    settings = ModelSettings(**load_config().model)
    assert (settings.source, settings.model_path, settings.n_threads) == ("gguf", "/m.gguf", 2)
    assert set(cfg.MODEL_FIELDS) == set(ModelSettings.__dataclass_fields__)


def test_broken_toml_names_file_line_and_column() -> None:
    path = write(cfg.config_path(), 'theme = "ctxfst-dark"\n\n[keys]\nsave = "ctrl+s\n')
    config = load_config()
    assert (config.theme, config.keymap) == (None, {})  # the defaults, not half a file
    [problem] = config.problems
    assert problem.startswith(f"{path}:4:")
    assert "not valid TOML" in problem and "\n" not in problem


def test_wrong_types_and_unknown_keys_are_reported_with_their_lines_and_skipped() -> None:
    path = write(cfg.config_path(), """\
theme = 3
colour = "x"

[keys]
save = ""
undo = 4
redo = "U"

[model]
source = "cloud"
n_ctx = "big"
n_threads = 0
temperature = 1
model = "m"

[layout]
tab = "nowhere"
tree_width = true

[watch]
enabled = "yes"
""")
    config = load_config()
    by_line = {int(p.split(":")[1]): p for p in config.problems}
    assert set(by_line) == {1, 2, 5, 6, 10, 11, 12, 13, 17, 18, 21}
    assert all(p.startswith(f"{path}:") and "\n" not in p for p in config.problems)
    assert "'theme' must be a string" in by_line[1]
    assert "unknown setting 'colour'" in by_line[2]
    assert "'source' must be one of bundled, gguf, endpoint" in by_line[10]
    assert "unknown key 'temperature'" in by_line[13]
    assert "true or false" in by_line[21]
    # the good settings beside the bad ones still count
    assert (config.keymap, config.model, config.layout, config.watch, config.theme) == (
        {"redo": "U"}, {"model": "m"}, {}, True, None)


def test_a_table_that_is_not_a_table() -> None:
    write(cfg.config_path(), 'keys = "ctrl+s"\n')
    assert load_config().problems == [f"{cfg.config_path()}:1: 'keys' must be a table ([keys]), not 'ctrl+s'"]


def test_unreadable_config_is_a_problem_not_a_crash() -> None:
    cfg.config_path().parent.mkdir(parents=True)
    cfg.config_path().write_bytes(b"theme = \"\xff\"\n")
    config = load_config()
    assert config.theme is None and "cannot be read" in config.problems[0]


def test_unknown_binding_ids_are_reported_with_a_hint_and_line() -> None:
    write(cfg.config_path(), '[keys]\nsave = "f2"\nsavve = "f3"\nzzz = "f4"\n')
    config = load_config()
    assert config.problems == []  # the config cannot know the ids; the UI asks with its own
    problems = config.keymap_problems(["save", "undo"])
    assert len(problems) == 2
    assert problems[0].startswith(f"{cfg.config_path()}:3: [keys] unknown binding id 'savve'")
    assert "did you mean 'save'" in problems[0]
    assert "zzz" in problems[1] and "did you mean" not in problems[1]
    assert keymap_problems({"save": "f2"}, ["save"]) == []
    assert keymap_problems({"x": "f2"}, ["save"])[0].startswith("[keys] unknown binding id 'x'")


def test_default_config_lists_every_binding_and_loads_clean(dirs: tuple[Path, Path]) -> None:
    path = cfg.config_path()
    assert write_default_config(path, BINDINGS) is True
    text = path.read_text(encoding="utf-8")
    for binding_id, keys, description in BINDINGS:
        assert binding_id in text and keys in text and description in text
    assert load_config(path) == Config(path)  # all commented out: the defaults
    # uncommenting the [keys] lines gives exactly the defaults back
    section = text.split("[keys]\n", 1)[1].split("\n\n", 1)[0]
    mine = write(path.with_name("mine.toml"), "[keys]\n" + "\n".join(line.removeprefix("# ") for line in section.splitlines()))
    assert load_config(mine).keymap == {i: k for i, k, _ in BINDINGS}
    # never over a user's own file
    path.write_text("theme = 'mine'\n", encoding="utf-8")
    assert write_default_config(path, BINDINGS) is False
    assert path.read_text(encoding="utf-8") == "theme = 'mine'\n"


# ---------------------------------------------------------------- state.json


def test_missing_state_is_a_first_start() -> None:
    assert load_state() == (State(), [])


def test_state_round_trip_per_folder(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    write(a / "sub" / "one.md", "x")
    write(b / "two.md", "y")
    state = State(theme="ctxfst-light", model={"source": "gguf", "model_path": "/m.gguf", "n_ctx": 2048})
    state.remember(a, a / "sub" / "one.md", tab="chunks", layout={"tree_width": 30})
    state.remember(b, b / "two.md", tab="source")
    assert save_state(state) is None
    loaded, problems = load_state()
    assert problems == [] and loaded == state
    assert loaded.last_folder == str(b.resolve())
    assert loaded.document_in(a) == a / "sub" / "one.md"  # each folder its own document
    assert loaded.document_in(b) == b / "two.md"
    assert loaded.folder_state(a).tab == "chunks" and loaded.folder_state(a).layout == {"tree_width": 30}
    assert json.loads(cfg.state_path().read_text())["folders"][str(a.resolve())]["document"] == "sub/one.md"


def test_restored_document_has_the_form_the_folder_scan_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ctxfst_tui.core.workspace.scan import iter_documents

    write(tmp_path / "docs" / "sub" / "n.md", "x")
    monkeypatch.chdir(tmp_path)
    state = State()
    state.remember(Path("docs"), Path("docs/sub/n.md"))
    assert state.folder_state(tmp_path / "docs").document == "sub/n.md"  # same folder, however named
    assert state.document_in(Path("docs")) in iter_documents(Path("docs"))


def test_state_forgets_documents_that_are_gone_or_outside(tmp_path: Path) -> None:
    folder = tmp_path / "f"
    write(folder / "doc.md", "x")
    state = State()
    state.remember(folder, tmp_path / "elsewhere.md")
    assert state.folder_state(folder).document is None
    state.remember(folder, folder / "doc.md")
    (folder / "doc.md").unlink()
    assert state.document_in(folder) is None
    state.folders[str(folder.resolve())].document = "../../etc/passwd"
    assert state.document_in(folder) is None
    assert state.document_in(tmp_path / "never-seen") is None


def test_state_keeps_the_most_recent_folders(tmp_path: Path) -> None:
    state = State()
    for i in range(cfg.MAX_FOLDERS + 5):
        state.remember(tmp_path / f"f{i}")
    state.remember(tmp_path / "f10")  # used again: kept, now the most recent
    assert len(state.folders) == cfg.MAX_FOLDERS
    assert str((tmp_path / "f0").resolve()) not in state.folders
    assert list(state.folders)[-1] == str((tmp_path / "f10").resolve())


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", "\xff"])
def test_corrupt_state_gives_defaults_and_a_problem(text: str) -> None:
    write(cfg.state_path(), text)
    state, problems = load_state()
    assert state == State()
    assert len(problems) == 1 and problems[0].startswith(str(cfg.state_path())) and "starting afresh" in problems[0]


def test_state_with_wrong_types_keeps_what_is_usable() -> None:
    write(cfg.state_path(), json.dumps({"last_folder": 3, "theme": "t", "model": {"source": "nope", "n_ctx": 512, "x": 1},
                                        "folders": {"/f": {"document": ["x"], "tab": "chunks", "layout": {"w": [1], "tree_width": 30}},
                                                    "/g": "junk"}}))
    state, problems = load_state()
    assert problems == []
    assert (state.last_folder, state.theme, state.model) == (None, "t", {"n_ctx": 512})
    assert state.folders == {"/f": cfg.FolderState(None, "chunks", {"tree_width": 30})}


def test_atomic_save_leaves_no_temp_files_and_replaces_whole() -> None:
    state = State(theme="a")
    assert save_state(state) is None
    state.theme = "b"
    assert save_state(state) is None
    assert sorted(p.name for p in cfg.state_dir().iterdir()) == ["state.json"]
    assert load_state()[0].theme == "b"


def test_a_failed_save_keeps_the_old_file_and_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    assert save_state(State(theme="old")) is None

    def boom(*args: object) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(cfg.os, "replace", boom)
        problem = save_state(State(theme="new"))
    assert problem is not None and "No space left" in problem and problem.startswith(str(cfg.state_path()))
    assert sorted(p.name for p in cfg.state_dir().iterdir()) == ["state.json"]
    assert load_state()[0].theme == "old"

