"""Model settings: what the model runtime is now (backend, model, context size, threads) and
which model the next job uses: the bundled one, another GGUF file, or an OpenAI-compatible endpoint.

Above the form, the models found on this machine (:mod:`ctxfst_tui.core.llm.discovery`, looked for
in a worker thread: the UI never waits for a disk or a port). Enter on one fills the form, tries it
(a GGUF's self-test, a server asked again) in a worker, and, when it passes, uses it.

The form only collects and checks what was typed; it dismisses with a ModelSettings (or None)
and the App hands that to its ModelService, which the state remembers.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, RadioButton, RadioSet, Static
from textual.widgets.option_list import Option

from textual.worker import Worker, WorkerState

from ctxfst_tui.core.llm.discovery import Discovery, FoundModel, discover, kept_verdict, size_words, try_model
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
    ModelSettingsScreen #found-status { color: $text-muted; height: auto; }
    ModelSettingsScreen #found { height: auto; max-height: 10; margin-bottom: 1; }
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
        self.found: list[FoundModel] = []  # the discovered models, in the list's order
        self.discovery: Discovery | None = None
        self.trying: FoundModel | None = None  # the picked model whose self-test runs
        self._try_cancel = threading.Event()
        self._try_worker: Worker | None = None

    def compose(self) -> ComposeResult:
        s = self.settings
        with VerticalScroll(id="dialog"):
            yield Static("Model settings", id="settings-title")
            yield Static("Looking for models on this machine…", id="found-status")
            yield OptionList(id="found", compact=True)
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
            hint = ("Enter on a found model tests it and uses it. The next model job uses these settings; "
                    "the model loads when that job starts.")
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
        self.query_one("#found", OptionList).focus()
        places = dict(getattr(getattr(self.app, "config", None), "discovery", {}) or {})
        settings = self.settings
        self.run_worker(lambda: discover(current=settings, **places), name="model discovery", group="model-discovery",
                        thread=True, exit_on_error=False)
        if self._look_up_verdict:  # hashing a big GGUF the first time takes a moment: never on the UI thread
            settings = self.settings
            self.run_worker(lambda: kept_self_test(settings), name="self-test verdict", group="model-settings",
                            thread=True, exit_on_error=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state not in (WorkerState.SUCCESS, WorkerState.ERROR):
            return
        if event.worker.group == "model-discovery":
            self._found_models(event.worker)
            return
        if event.worker.group == "model-verdicts":
            if event.state == WorkerState.SUCCESS and event.worker.result is not None:
                self._show_found(event.worker.result)
            return
        if event.worker.group == "model-try":
            self._tried(event.worker)
            return
        if event.worker.group != "model-settings":
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
        self._try_cancel.set()  # a self-test child still running is stopped
        self.dismiss(None)

    # ------------------------------------------------------------ the models found on this machine
    def _found_models(self, worker: Worker) -> None:
        status = self.query_one("#found-status", Static)
        if worker.state != WorkerState.SUCCESS or worker.result is None:
            status.update(f"Could not look for models: {worker.error}")
            return
        self.discovery = found = worker.result
        self.found = list(found.models)
        self._show_found()
        places = sum(p.exists for p in found.places)
        servers = sum(m.kind == "server" and m.usable for m in self.found)
        status.update(f"Found {len(self.found)} models ({places} folders, {servers} served, {found.seconds:.1f} s); "
                      "Enter tests one and uses it:")
        models = list(self.found)
        self.run_worker(lambda: [kept_verdict(m) for m in models], name="kept verdicts", group="model-verdicts",
                        thread=True, exit_on_error=False)

    def _row(self, model: FoundModel, current: bool, verdict: str | None) -> Content:
        """Two lines: ``● name``, then what it is (size, chat template, kept self-test) and where."""
        mark = "● " if current else "  "
        if model.kind == "server":
            facts = [model.location, model.problem] if model.problem else [model.location]
        elif model.problem:
            facts = [model.problem if len(model.problem) <= 60 else model.problem[:59] + "…"]  # the CLI says it all
        else:
            facts = [size_words(model.size), "chat template" if model.chat_template else "no chat template"]
            if verdict and not verdict.startswith("not run"):  # ok, crashed (SIGSEGV), error, hung: the word only
                facts.append(f"self-test {verdict.split(' (kept')[0].split(' (tested')[0].split(':')[0].split(' (stopped')[0]}")
        facts.append(model.place.split(" (")[0])
        return Content.assemble(mark, (model.name, "bold" if current else ""), "\n  ", (" · ".join(facts), "$text-muted"))

    def _show_found(self, verdicts: list[str | None] | None = None) -> None:
        """(Re)draw the list: the current model marked ● and highlighted; a damaged file or a silent
        server shown but not selectable."""
        listing = self.query_one("#found", OptionList)
        current = self.discovery.current(self.settings) if self.discovery is not None else None
        verdicts = verdicts or [None] * len(self.found)
        highlighted = listing.highlighted
        listing.set_options(Option(self._row(m, m is current, v), id=f"found-{n}", disabled=not m.usable)
                            for n, (m, v) in enumerate(zip(self.found, verdicts)))
        if highlighted is not None:
            listing.highlighted = highlighted
        elif current is not None:
            listing.highlighted = self.found.index(current)

    @on(OptionList.OptionSelected, "#found")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        """Enter on a found model: fill the form with it, then try it (in a worker)."""
        event.stop()
        model = self.found[event.option_index]
        error = self.query_one("#settings-error", Static)
        wanted = model.settings()
        self.query_one(f"#source-{wanted.source}", RadioButton).value = True
        self._enable(wanted.source)
        if wanted.source == "gguf":
            self.query_one("#model-path", Input).value = wanted.model_path
        elif wanted.source == "endpoint":
            self.query_one("#endpoint", Input).value = wanted.endpoint
            self.query_one("#model-name", Input).value = wanted.model
        try:
            self.result()
        except ValueError as exc:
            error.update(str(exc))
            return
        error.update("")
        self._try_cancel.set()  # a self-test of an earlier pick is no longer wanted
        self._try_cancel = cancel = threading.Event()
        self.trying = model
        what = "asking the server" if model.kind == "server" else "self-test in a child process"
        self.query_one("#found-status", Static).update(f"Trying {model.name} ({what})…")
        self._try_worker = self.run_worker(lambda: try_model(model, cancel=cancel), name="try model", group="model-try",
                                           thread=True, exit_on_error=False)

    def _tried(self, worker: Worker) -> None:
        if worker is not self._try_worker:  # an earlier pick's test, replaced by a later pick
            return
        model, self.trying, self._try_worker = self.trying, None, None
        if model is None or not self.is_attached:
            return
        status = self.query_one("#found-status", Static)
        if worker.state != WorkerState.SUCCESS:
            status.update(f"{model.name}: the test stopped: {worker.error}")
            return
        tried = worker.result
        if not tried.ok:  # said above the list, where the eyes are (the form may be scrolled away)
            status.update(Content.assemble((f"{model.name} did not pass: ", "$text-error"), tried.message,
                                           " — pick another, or Use takes it anyway."))
            return
        try:
            settings = self.result()
        except ValueError as exc:
            self.query_one("#settings-error", Static).update(str(exc))
            return
        self.app.notify(f"{model.name}: {tried.message}.", title="Model tested", timeout=4)
        self.dismiss(settings)
