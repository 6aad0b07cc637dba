"""The workbench from the command line: ``ctxfst-tui [FOLDER | --last]`` in this terminal, and
``serve``, one workbench per browser tab. Textual is imported only here, and only when a
workbench starts, so the headless commands never load it."""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Sequence

from ctxfst_tui import __version__
from ctxfst_tui.cli.common import CliError
from ctxfst_tui.cli.model_options import add_app_model_options, app_model_argv, settings_from_args


def serve_command(args: argparse.Namespace) -> str:
    """The shell command textual-serve runs for each browser session: this workbench, same Python;
    ``exec`` so the session's process is the app itself (the server can end it)."""
    folder = Path(args.folder)
    if not folder.is_dir():
        raise CliError(f"{folder}: no such folder")
    return "exec " + shlex.join([sys.executable, "-m", "ctxfst_tui", str(folder.resolve()), *app_model_argv(args)])


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the workbench over HTTP: each browser tab gets its own app process (textual-serve),
    behind a per-run token and Host/Origin checks (ctxfst_tui/ui/serve.py); the URL with the token
    is printed once the server starts."""
    command = serve_command(args)
    from ctxfst_tui.ui.serve import GuardedServer

    server = GuardedServer(command, host=args.host, port=args.port, title="CtxFST Workbench",
                           public_url=args.public_url, folder=Path(args.folder).resolve())
    server.serve()
    return 0


def run_app(argv: Sequence[str]) -> int:
    """Open the workbench on a folder (without a subcommand), under the crash guard."""
    p = argparse.ArgumentParser(prog="ctxfst-tui", description="Open the CtxFST workbench on a folder.")
    p.add_argument("folder", nargs="?", default=None, help="folder of .md / .ctxfst.md / .txt documents (default: .)")
    p.add_argument("--last", action="store_true", help="the folder the workbench had open last time")
    p.add_argument("--version", action="version", version=f"ctxfst-tui {__version__}")
    add_app_model_options(p)
    args = p.parse_args(argv)
    if args.last:
        if args.folder is not None:
            raise CliError("give a FOLDER or --last, not both")
        from ctxfst_tui.config import load_state

        state, _problems = load_state()
        if not state.last_folder:
            raise CliError("no folder remembered yet (the state file records one when the workbench quits)")
        args.folder = state.last_folder
    folder = Path(args.folder or ".")
    if not folder.is_dir():
        raise CliError(f"{folder}: no such folder")
    from ctxfst_tui.ui.app import WorkbenchApp

    settings = settings_from_args(args)
    from ctxfst_tui.config import state_dir
    from ctxfst_tui.core.workspace.journal import journal_dir
    from ctxfst_tui.ui.crash_guard import run_guarded

    def workbench() -> int:
        WorkbenchApp(folder, model_settings=settings, watch_disk=True).run()
        return 0

    return run_guarded(workbench, journal=str(journal_dir(folder)), crash_log=state_dir() / "logs" / "crash.log")
