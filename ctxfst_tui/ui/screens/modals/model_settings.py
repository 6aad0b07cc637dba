"""Model settings: what the model runtime is now (backend, model, context size, threads) and
which model the next job uses: the bundled one, another GGUF file, or an OpenAI-compatible endpoint.

The form only collects and checks what was typed; it dismisses with a ModelSettings (or None)
and the App hands that to its ModelService.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, RadioButton, RadioSet, Static

from textual.worker import Worker, WorkerState

from ctxfst_tui.core.llm.settings import SOURCES, ModelSettings, kept_self_test

INFO_FIELDS = (
    ("backend", "Backend"), ("model", "Model"), ("endpoint", "Endpoint"), ("context_size", "Context"),
    ("threads", "Threads"), ("chat", "Chat template"), ("loaded", "Loaded"), ("load_seconds", "Load time"),
    ("self_test", "Self-test"),
    ("concurrency", "In flight"), ("model_calls", "Model calls"), ("cache_hits", "Cache hits"),
    ("cache", "Cache"), ("problem", "Problem"),
)
CHOICES = {"bundled": "Bundled model (Gemma 3 270M, CPU)", "gguf": "Another GGUF file", "endpoint": "OpenAI-compatible endpoint"}


def _value(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if key == "load_seconds":
        return f"{value:.2f} s"
    if key == "context_size":
        return f"{value} tokens"
    return str(value)


def info_lines(info: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, value) rows of backend_info, in a fixed order, unknown values left out."""
    return [(label, _value(key, info[key])) for key, label in INFO_FIELDS if info.get(key) not in (None, "")]


def _int(text: str, what: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    if not text.isdigit() or int(text) <= 0:
        raise ValueError(f"{what} must be a positive whole number")
    return int(text)


class ModelSettingsScreen(ModalScreen[ModelSettings | None]):
    """Dismisses with the settings for the next job, or None (escape / Cancel)."""

    DEFAULT_CSS = """
    ModelSettingsScreen {
        align: center middle;
        background: $background 60%;
    }
    ModelSettingsScreen > #dialog {
        width: 90;
        max-width: 95%;
        height: auto;
        max-height: 95%;
        overflow-y: auto;
        padding: 1 2;
        border: thick $primary;
        background: $surface;
    }
    ModelSettingsScreen #settings-title { margin-bottom: 1; text-style: bold; }
    ModelSettingsScreen #current {
        height: auto;
        padding: 0 1;
        margin-bottom: 1;
        border: round $foreground 25%;
        border-title-color: $text-muted;
    }
    ModelSettingsScreen RadioSet { width: 1fr; margin-bottom: 1; }
    ModelSettingsScreen .form-row { height: 1; margin-bottom: 1; }
    ModelSettingsScreen .form-label { width: 14; padding: 0 1 0 0; color: $text-muted; }
    ModelSettingsScreen .form-row Input { width: 1fr; }
    ModelSettingsScreen .form-row Input:disabled { opacity: 50%; }
    ModelSettingsScreen #settings-error { color: $text-error; height: auto; }
    ModelSettingsScreen #settings-hint { color: $text-muted; margin-bottom: 1; }
    ModelSettingsScreen #buttons { height: auto; align-horizontal: right; }
    ModelSettingsScreen Button { margin-left: 2; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="model-settings.cancel")]

    def __init__(self, settings: ModelSettings, info: dict[str, Any], running: bool = False) -> None:
        super().__init__()
        self.settings = settings
        self.info = dict(info)
        self.running = running
        # the model's self-test verdict: the live one if the info has it, else the kept one (looked up in a worker)
        self._look_up_verdict = settings.source != "endpoint" and not self.info.get("self_test") \
            and self.info.get("backend") != "openai"
        if self._look_up_verdict:
            self.info["self_test"] = "looking…"

    def compose(self) -> ComposeResult:
        s = self.settings
        with VerticalScroll(id="dialog"):
            yield Static("Model settings", id="settings-title")
            current = Static(self._current(), id="current")
            current.border_title = "Now"
            yield current
            with RadioSet(id="source"):
                for key in SOURCES:
                    yield RadioButton(CHOICES[key], value=key == s.source, id=f"source-{key}")
            with Horizontal(classes="form-row"):
                yield Label("GGUF file", classes="form-label")
                yield Input(s.model_path, placeholder="/path/to/model.gguf", id="model-path", compact=True)
            with Horizontal(classes="form-row"):
                yield Label("Endpoint URL", classes="form-label")
                yield Input(s.endpoint, placeholder="http://127.0.0.1:8000/v1", id="endpoint", compact=True)
            with Horizontal(classes="form-row"):
                yield Label("Model name", classes="form-label")
                yield Input(s.model, placeholder="served model (empty: the server's first)", id="model-name", compact=True)
            with Horizontal(classes="form-row"):
                yield Label("Context size", classes="form-label")
                yield Input(str(s.n_ctx or ""), placeholder="tokens (empty: default)", id="n-ctx", type="integer", compact=True)
            with Horizontal(classes="form-row"):
                yield Label("Threads", classes="form-label")
                yield Input(str(s.n_threads or ""), placeholder="CPU threads (empty: default)", id="n-threads", type="integer", compact=True)
            yield Static("", id="settings-error")
            hint = "The next model job uses these settings; the model loads when that job starts."
            if self.running:
                hint += " The job running now keeps its model."
            yield Static(hint, id="settings-hint")
            with Horizontal(id="buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Use", id="use", variant="primary")

    def _current(self) -> Content:
        return Content("\n").join(
            Content.assemble((f"{label:<15}", "$text-muted"), value) for label, value in info_lines(self.info))

    def on_mount(self) -> None:
        self._enable(self.settings.source)
        self.query_one(RadioSet).focus()
        if self._look_up_verdict:  # hashing a big GGUF the first time takes a moment: never on the UI thread
            settings = self.settings
            self.run_worker(lambda: kept_self_test(settings), name="self-test verdict", group="model-settings",
                            thread=True, exit_on_error=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "model-settings" or event.state not in (WorkerState.SUCCESS, WorkerState.ERROR):
            return
        if event.state == WorkerState.SUCCESS:
            self.info["self_test"] = event.worker.result
        else:
            self.info["self_test"] = f"unknown ({event.worker.error})"
        self.query_one("#current", Static).update(self._current())

    @property
    def source(self) -> str:
        pressed = self.query_one(RadioSet).pressed_button
        return (pressed.id or "source-bundled").removeprefix("source-") if pressed is not None else "bundled"

    def _enable(self, source: str) -> None:
        self.query_one("#model-path", Input).disabled = source != "gguf"
        self.query_one("#endpoint", Input).disabled = source != "endpoint"
        self.query_one("#model-name", Input).disabled = source != "endpoint"
        self.query_one("#n-threads", Input).disabled = source == "endpoint"

    @on(RadioSet.Changed)
    def _source_changed(self) -> None:
        self._enable(self.source)
        self.query_one("#settings-error", Static).update("")

    def result(self) -> ModelSettings:
        """The settings typed in; ValueError (one line) when they cannot be used."""
        source = self.source
        path = self.query_one("#model-path", Input).value.strip()
        endpoint = self.query_one("#endpoint", Input).value.strip()
        model = self.query_one("#model-name", Input).value.strip()
        n_ctx = _int(self.query_one("#n-ctx", Input).value, "Context size")
        threads = _int(self.query_one("#n-threads", Input).value, "Threads")
        if n_ctx is not None and n_ctx < 64:
            raise ValueError("Context size must be at least 64 tokens")
        if source == "gguf":
            if not path:
                raise ValueError("Give the path of a .gguf file")
            file = Path(path).expanduser()
            if not file.is_file():
                raise ValueError(f"No such file: {file}")
            return ModelSettings("gguf", model_path=str(file), n_ctx=n_ctx, n_threads=threads)
        if source == "endpoint":
            if not endpoint.startswith(("http://", "https://")):
                raise ValueError("The endpoint is a URL starting with http:// or https://")
            return ModelSettings("endpoint", endpoint=endpoint, model=model, n_ctx=n_ctx)
        return ModelSettings("bundled", n_ctx=n_ctx, n_threads=threads)

    @on(Button.Pressed, "#use")
    @on(Input.Submitted)
    def _use(self) -> None:
        try:
            settings = self.result()
        except ValueError as exc:
            self.query_one("#settings-error", Static).update(str(exc))
            return
        self.dismiss(settings)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
