"""The user's settings (``config.toml``, read only) and what they were doing (``state.json``).

Kept apart on purpose: the config is written by the user and never by the app, so a comment or a
pinned choice is never lost; the state is the app's own memory (last folder, open document per
folder, tab, layout, theme, model) and is rewritten atomically on exit. Neither may stop the app from
starting: a broken file gives the defaults plus one-line problems naming the file (and line), which
the UI shows as notifications. No Textual import here, so the CLI and the tests can use it.

Where: platformdirs' user config and state dirs for ``ctxfst-tui``, or the folders named by
``CTXFST_TUI_CONFIG_DIR`` / ``CTXFST_TUI_STATE_DIR`` (tests and portable set-ups).
"""
from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import platformdirs

from ctxfst_tui.core.safe_write import write_text
from ctxfst_tui.core.llm import settings as model_settings
from ctxfst_tui.core.workspace.files import regular_file, safe_resolve

APP_NAME = "ctxfst-tui"
CONFIG_ENV = "CTXFST_TUI_CONFIG_DIR"
STATE_ENV = "CTXFST_TUI_STATE_DIR"
TABS = ("source", "chunks", "entities", "diagnosis", "summary", "retrieval")  # the workbench tabs, as "<name>-tab"
MODEL_SOURCES = model_settings.SOURCES
MODEL_FIELDS = model_settings.field_types()  # [model] takes ModelSettings' own fields: ModelSettings(**config.model)
LAYOUT_FIELDS: dict[str, type] = {"tab": str, "tree_width": int}
DISCOVERY_FIELDS: dict[str, type] = {"folder": str, "endpoint": str, "ports": bool}  # core.llm.discovery.discover(**config.discovery)
SUMMARY_FIELDS: dict[str, type] = {"resummarize_on_save": bool}
TABLES = ("keys", "model", "layout", "watch", "discovery", "summary")
TYPE_NAMES = {str: "a string", int: "an integer", bool: "true or false"}
MAX_FOLDERS = 50  # per-folder state entries kept, most recently used last


def config_dir() -> Path:
    return Path(os.environ.get(CONFIG_ENV) or platformdirs.user_config_dir(APP_NAME))


def state_dir() -> Path:
    return Path(os.environ.get(STATE_ENV) or platformdirs.user_state_dir(APP_NAME))


def config_path() -> Path:
    return config_dir() / "config.toml"


def state_path() -> Path:
    return state_dir() / "state.json"


# ---------------------------------------------------------------- config.toml


@dataclass(frozen=True)
class Config:
    """What ``config.toml`` says; every field has a default, so an empty file is a valid config.

    ``model`` and ``layout`` hold only the keys the file sets (with the right types): an unset
    key means "the app's default, or what the state remembers".
    """

    path: Path
    theme: str | None = None
    keymap: dict[str, str] = field(default_factory=dict)
    model: dict[str, Any] = field(default_factory=dict)
    layout: dict[str, Any] = field(default_factory=dict)
    watch: bool = True
    discovery: dict[str, Any] = field(default_factory=dict)  # where model discovery also looks
    resummarize_on_save: bool = True  # [summary]: a save re-summarizes the stale scenes of a summarized novel
    problems: list[str] = field(default_factory=list)
    key_lines: dict[str, int] = field(default_factory=dict, repr=False)  # binding id → line in the file

    def keymap_problems(self, known_ids: Iterable[str]) -> list[str]:
        return keymap_problems(self.keymap, known_ids, self.path, self.key_lines)


def _line_of(text: str, table: str | None, key: str) -> int | None:
    """The line where ``key`` is set inside ``[table]`` (None: at the top, where ``[key]`` itself
    counts too): tomllib keeps no positions, and a problem without a line is hard to find."""
    current: str | None = None
    assign = re.compile(rf"""\s*["']?{re.escape(key)}["']?\s*=""")
    header = re.compile(r"\s*\[+\s*([^\]]+?)\s*\]")
    for number, line in enumerate(text.splitlines(), 1):
        if m := header.match(line):
            current = m.group(1).strip("\"'")
            if table is None and current.split(".")[0] == key:
                return number
        elif current == table and assign.match(line):
            return number
    return None


def _where(path: Path, line: int | None) -> str:
    return f"{path}:{line}" if line else str(path)


def _type_ok(value: Any, wanted: type) -> bool:
    return isinstance(value, wanted) and not (wanted is int and isinstance(value, bool))


def _check_fields(data: Mapping[str, Any], fields: Mapping[str, type]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """(the well-typed known keys, [(key, problem)]): one bad key never spoils the others."""
    good: dict[str, Any] = {}
    bad: list[tuple[str, str]] = []
    for key, value in data.items():
        wanted = fields.get(key)
        if wanted is None:
            bad.append((key, f"unknown key '{key}' (known: {', '.join(fields)})"))
        elif not _type_ok(value, wanted):
            bad.append((key, f"'{key}' must be {TYPE_NAMES[wanted]}, not {value!r}"))
        elif key == "source" and value not in MODEL_SOURCES:
            bad.append((key, f"'source' must be one of {', '.join(MODEL_SOURCES)}, not {value!r}"))
        elif key == "tab" and value not in TABS:
            bad.append((key, f"'tab' must be one of {', '.join(TABS)}, not {value!r}"))
        elif wanted is int and value < 1:
            bad.append((key, f"'{key}' must be a positive integer, not {value!r}"))
        else:
            good[key] = value
    return good, bad


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """[keys] with ids like ``tree.open``: written unquoted, TOML reads them as nested tables."""
    flat: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _toml_error(path: Path, exc: tomllib.TOMLDecodeError) -> str:
    """``file:line:column: message``; Python 3.11's error keeps the position only in its text."""
    text = str(exc)
    line, col = getattr(exc, "lineno", None), getattr(exc, "colno", None)
    if line is None and (m := re.search(r"\(at line (\d+), column (\d+)\)", text)):
        line, col = int(m.group(1)), int(m.group(2))
    message = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", getattr(exc, "msg", None) or text)
    where = f"{path}:{line}:{col}" if line else str(path)
    return f"{where}: not valid TOML, using the defaults: {message}"


def load_config(path: Path | None = None) -> Config:
    """The config at ``path`` (default :func:`config_path`); never raises."""
    path = Path(path) if path is not None else config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Config(path)
    except (OSError, UnicodeDecodeError) as exc:
        return Config(path, problems=[f"{path}: cannot be read, using the defaults: {exc}"])
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return Config(path, problems=[_toml_error(path, exc)])

    problems: list[str] = []

    def problem(table: str | None, key: str, message: str) -> None:
        problems.append(f"{_where(path, _line_of(text, table, key))}: {message}")

    theme = data.pop("theme", None)
    if theme is not None and not isinstance(theme, str):
        problem(None, "theme", f"'theme' must be a string, not {theme!r}")
        theme = None
    tables: dict[str, dict[str, Any]] = {}
    for key, value in data.items():
        if key not in TABLES:
            problem(None, key, f"unknown setting '{key}' (known: theme, {', '.join(f'[{t}]' for t in TABLES)})")
        elif not isinstance(value, dict):
            problem(None, key, f"'{key}' must be a table ([{key}]), not {value!r}")
        else:
            tables[key] = value

    keymap: dict[str, str] = {}
    key_lines: dict[str, int] = {}
    for binding_id, keys in _flatten(tables.get("keys", {})).items():
        line = _line_of(text, "keys", binding_id)
        parts = [k.strip() for k in keys.split(",")] if isinstance(keys, str) else []
        if not parts or not all(parts):
            problems.append(f"{_where(path, line)}: [keys] {binding_id} must be keys like \"ctrl+s\" or \"ctrl+s,f2\", not {keys!r}")
            continue
        keymap[binding_id] = ",".join(parts)
        if line:
            key_lines[binding_id] = line

    checked: dict[str, dict[str, Any]] = {}
    for table, fields in (("model", MODEL_FIELDS), ("layout", LAYOUT_FIELDS), ("watch", {"enabled": bool}),
                          ("discovery", DISCOVERY_FIELDS), ("summary", SUMMARY_FIELDS)):
        good, bad = _check_fields(tables.get(table, {}), fields)
        for key, message in bad:
            problem(table, key, f"[{table}] {message}")
        checked[table] = good
    return Config(path, theme=theme, keymap=keymap, model=checked["model"], layout=checked["layout"],
                  watch=checked["watch"].get("enabled", True), discovery=checked["discovery"],
                  resummarize_on_save=checked["summary"].get("resummarize_on_save", True), problems=problems,
                  key_lines=key_lines)


def keymap_problems(keymap: Mapping[str, str], known_ids: Iterable[str], path: Path | None = None,
                    lines: Mapping[str, int] | None = None) -> list[str]:
    """One line per binding id of ``keymap`` that no binding has (Textual would ignore it silently),
    with the closest known id as a hint."""
    known = sorted(set(known_ids))
    problems = []
    for binding_id in keymap:
        if binding_id in known:
            continue
        close = difflib.get_close_matches(binding_id, known, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        where = f"{_where(path, (lines or {}).get(binding_id))}: " if path else ""
        problems.append(f"{where}[keys] unknown binding id '{binding_id}', ignored{hint} (the help screen, ?, lists the ids)")
    return problems


def default_config_text(bindings: Iterable[tuple[str, str, str]]) -> str:
    """A config file that sets nothing but shows everything: each line commented out with its default."""
    rows = sorted({b[0]: b for b in bindings}.values())
    lines = [(f"{_toml_key(i)} = {json.dumps(k)}", d) for i, k, d in rows]
    width = max([len(a) for a, _ in lines] + [20])
    keys = "\n".join(f"# {a:<{width}}  # {d}" for a, d in lines)
    return f"""\
# ctxfst-tui configuration. Every setting is optional: uncomment a line to change it.
# A problem in this file is reported when the workbench starts; it never stops it.

# The theme: ctxfst-dark, ctxfst-light, ctxfst-high-contrast, or any Textual theme.
# Left unset, the workbench remembers the theme last picked from the palette (ctrl+p, "theme").
# theme = "ctxfst-dark"

# Keys: binding id = "key" or "key,key". The help screen (? or f1) shows each binding's id.
[keys]
{keys}

# The model of contextualize / extract entities. Left unset, the workbench remembers the
# model last chosen with ctrl+o; command-line options (--model, --endpoint…) win over both.
[model]
# source = "bundled"     # bundled | gguf | endpoint
# model_path = ""        # a .gguf file (source = "gguf")
# endpoint = ""          # an OpenAI-compatible URL (source = "endpoint")
# model = ""             # the served model's name (empty: the server's first)
# n_ctx = 4096           # context size in tokens
# n_threads = 4          # CPU threads (llama.cpp)

[layout]
# tab = "source"         # the tab to start on: {" | ".join(TABS)}
# tree_width = 32        # the document tree's width in columns

[watch]
# enabled = true         # reload documents that other programs change on disk

# Where the model list (ctrl+o, `ctxfst-tui models`) looks besides the usual places.
[discovery]
# folder = "~/llm"       # a folder searched for .gguf files
# endpoint = ""          # an OpenAI-compatible server asked for its /v1/models
# ports = true           # ask localhost's usual ports (11434, 8080, 1234, 8000)

[summary]
# resummarize_on_save = true  # saving a summarized novel (here or on disk) re-summarizes its edited scenes
"""


def write_default_config(path: Path | None = None, bindings: Iterable[tuple[str, str, str]] = (),
                         overwrite: bool = False) -> bool:
    """Write the commented example config (``bindings``: (id, keys, description) from the UI).

    False, and nothing written, when the file exists and ``overwrite`` is not set: the user's
    config is theirs.
    """
    path = Path(path) if path is not None else config_path()
    if path.exists() and not overwrite:
        return False
    write_text(path, default_config_text(bindings), parents=True)
    return True


# ---------------------------------------------------------------- state.json


@dataclass
class FolderState:
    """What was open in one folder: reopening the folder restores it."""

    document: str | None = None  # relative to the folder, with forward slashes
    tab: str | None = None
    layout: dict[str, Any] = field(default_factory=dict)


@dataclass
class State:
    last_folder: str | None = None
    theme: str | None = None
    model: dict[str, Any] = field(default_factory=dict)
    folders: dict[str, FolderState] = field(default_factory=dict)  # resolved folder → its state

    @staticmethod
    def _key(folder: Path | str) -> str:
        return str(safe_resolve(Path(folder).expanduser()))

    def folder_state(self, folder: Path | str) -> FolderState:
        return self.folders.get(self._key(folder)) or FolderState()

    def document_in(self, folder: Path | str) -> Path | None:
        """The document last open in ``folder``, if it is still a file inside it; as ``folder / rel``,
        the form the folder scan (``iter_documents(folder)``) gives its paths."""
        rel = self.folder_state(folder).document
        if not rel:
            return None
        base = Path(self._key(folder))
        resolved = safe_resolve(base / rel)  # a symlink loop resolves to itself and is no file
        return Path(folder) / rel if resolved.is_relative_to(base) and regular_file(resolved) is None else None

    def remember(self, folder: Path | str, document: Path | str | None = None, tab: str | None = None,
                 layout: Mapping[str, Any] | None = None) -> None:
        """Record ``folder`` as the last one and what was open in it (most recent folders kept).

        ``document`` as the app holds it (absolute, or relative to the working directory like the
        folder); stored relative to the folder, and forgotten if it lies outside.
        """
        key = self._key(folder)
        rel = None
        if document is not None:
            doc = safe_resolve(Path(document).expanduser())
            rel = doc.relative_to(key).as_posix() if doc.is_relative_to(key) else None
        self.folders.pop(key, None)
        self.folders[key] = FolderState(rel, tab, dict(layout or {}))
        while len(self.folders) > MAX_FOLDERS:
            self.folders.pop(next(iter(self.folders)))
        self.last_folder = key

    def to_json(self) -> dict[str, Any]:
        return {"version": 1, "last_folder": self.last_folder, "theme": self.theme, "model": self.model,
                "folders": {k: {"document": f.document, "tab": f.tab, "layout": f.layout} for k, f in self.folders.items()}}


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _scalars(value: Any) -> dict[str, Any]:
    ok = (str, int, float, bool)
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, ok)} if isinstance(value, dict) else {}


def load_state(path: Path | None = None) -> tuple[State, list[str]]:
    """(the state, problems); a missing file is a first start, a corrupt one is reported and
    replaced by the defaults (and overwritten on the next save)."""
    path = Path(path) if path is not None else state_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return State(), []
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return State(), [f"{path}: the saved state cannot be read, starting afresh: {exc}"]
    if not isinstance(data, dict):
        return State(), [f"{path}: the saved state is not a JSON object, starting afresh"]
    model, _ = _check_fields(_scalars(data.get("model")), MODEL_FIELDS)
    folders: dict[str, FolderState] = {}
    for key, entry in (data.get("folders") if isinstance(data.get("folders"), dict) else {}).items():
        if isinstance(entry, dict):
            tab = _opt_str(entry.get("tab"))
            folders[key] = FolderState(_opt_str(entry.get("document")), tab, _scalars(entry.get("layout")))
    return State(_opt_str(data.get("last_folder")), _opt_str(data.get("theme")), model, folders), []


def save_state(state: State, path: Path | None = None) -> str | None:
    """Write the state atomically; None when written, else a one-line problem (never raises:
    it runs while the app closes)."""
    path = Path(path) if path is not None else state_path()
    try:
        write_text(path, json.dumps(state.to_json(), indent=1, ensure_ascii=False) + "\n", parents=True)
    except (OSError, TypeError, ValueError) as exc:
        return f"{path}: the state was not saved: {exc}"
    return None
