"""The model options of the command line, defined once, and the one way they become a backend.

Two sets share the table below: the model jobs' (``contextualize``, ``entities extract``,
``summarize``: every option) and the workbench's (``ctxfst-tui FOLDER``, ``serve``: the model and
its sizes; the rest is chosen in the workbench). Either way the options describe a
:class:`~ctxfst_tui.core.llm.settings.ModelSettings`, built by
:func:`~ctxfst_tui.core.llm.settings.build_backend` like the workbench's own model.
"""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the model runtime is imported when a command needs a model, not at start-up
    from ctxfst_tui.core.llm.settings import ModelSettings

_NOT_IN_APP = object()  # an option the workbench's set leaves out

# (flag, argparse keywords, help in the model jobs' set, help in the workbench's set)
_OPTIONS: tuple[tuple[str, dict[str, Any], str, Any], ...] = (
    ("--model", {"default": None},
     "a GGUF file (default: the bundled Gemma 3 270M), or the served model name with --endpoint",
     "a GGUF for model jobs (default: the bundled model), or the served model with --endpoint"),
    ("--endpoint", {"default": None},
     "an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1",
     "an OpenAI-compatible server for model jobs"),
    ("--api", {"choices": ("chat", "completions"), "default": None},
     "endpoint API (default: chat)", _NOT_IN_APP),
    ("--n-ctx", {"type": int, "default": None}, "context size of the in-process model", None),
    ("--threads", {"type": int, "default": None}, "CPU threads of the in-process model", None),
    ("--concurrency", {"type": int, "default": None}, "requests in flight to an endpoint", _NOT_IN_APP),
    ("--no-cache", {"action": "store_true"}, "do not read or write the completion cache", _NOT_IN_APP),
)
_APP_FLAGS = ("--model", "--endpoint", "--n-ctx", "--threads")


def add_model_options(p: argparse.ArgumentParser) -> None:
    """Every model option, for a subcommand that runs model jobs itself."""
    for flag, kwargs, help_text, _app_help in _OPTIONS:
        p.add_argument(flag, help=help_text, **kwargs)


def add_app_model_options(p: argparse.ArgumentParser) -> None:
    """The model options of the workbench (``ctxfst-tui FOLDER``, ``serve``)."""
    for flag, kwargs, _help_text, app_help in _OPTIONS:
        if app_help is not _NOT_IN_APP:
            p.add_argument(flag, help=app_help, **kwargs)


def settings_from_args(args: argparse.Namespace) -> ModelSettings:
    from ctxfst_tui.core.llm.settings import ModelSettings

    return ModelSettings.from_options(args.model, args.endpoint, args.n_ctx, args.threads)


def app_model_argv(args: argparse.Namespace) -> list[str]:
    """The workbench's model options given, as arguments again (``serve`` starts one app per browser)."""
    out: list[str] = []
    for flag in _APP_FLAGS:
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None:
            out += [flag, str(value)]
    return out


def make_backend_from_args(args: argparse.Namespace) -> Any:
    """The backend of a model-job subcommand. A ``--model`` that is no ``.gguf`` file and has no
    ``--endpoint`` is refused here, as a served model's name given without its server."""
    from ctxfst_tui.core.llm.base import ModelError
    from ctxfst_tui.core.llm.settings import build_backend

    settings = settings_from_args(args)
    if settings.source == "gguf" and not settings.model_path.lower().endswith(".gguf"):
        raise ModelError(f"--model {settings.model_path!r} is not a .gguf file; "
                         "to use a served model give --endpoint URL as well")
    return build_backend(settings, api=args.api, concurrency=args.concurrency, cache=not args.no_cache)
