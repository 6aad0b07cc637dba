"""Keeping the journal of unsaved edits in step with the session, and offering it back at start.

The App owns one ``JournalKeeper``. A change of the session (``Session.version``) is journaled
at once (right after the handler that made it): the dirty documents are snapshot on the UI
thread (bytes) and a thread worker writes them. Further changes within ``DELAY`` seconds are
gathered into one more write when that time is up, so a burst of edits costs two writes and the
last edit is on disk at most ``DELAY`` seconds plus one small write after it was made. Journaling starts only once the folder's old
journal, if any, has been offered back (recovered or discarded): until then it is left alone.
Each app journals into its own locked session (``core.workspace.journal``), so a second app on the same
folder never offers the first one's live edits, and only sessions that ended are offered.
"""
from __future__ import annotations

import datetime as _dt
from functools import partial
from typing import TYPE_CHECKING

from ctxfst_tui.core.workspace.journal import (
    Claim,
    Journal,
    JournalEntry,
    claim,
    recover,
    unsaved,
)
from ctxfst_tui.ui.screens.modals.recovery import RecoveryItem, RecoveryScreen

if TYPE_CHECKING:
    from textual.app import App
    from textual.timer import Timer

    from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen
    from ctxfst_tui.services.session import Session

DELAY = 0.5  # seconds: changes within this time of a journal write are gathered into the next


class JournalKeeper:
    """The journal of the App's folder, driven from the UI thread."""

    def __init__(self, app: "App", session: "Session") -> None:
        self.app = app
        self.session = session
        self.journal = Journal(session.root)
        self.ready = False  # journaling runs once the old journal has been offered back
        self.offered = False
        self._timer: "Timer | None" = None  # running: a write went out less than DELAY ago
        self._more = False  # changes since that write
        self._seq = 0
        self._error: str | None = None  # the last write failure shown (shown once, until it changes)
        self._claim: "Claim | None" = None  # ended sessions being offered (locked until answered)
        session.listeners.append(self.changed)

    # ------------------------------------------------------------ journaling
    def changed(self) -> None:
        """The workspace changed (or was saved): journal the dirty documents now, or, right
        after another write, once ``DELAY`` is up."""
        if not self.ready:
            return
        if self._timer is not None:
            self._more = True
            return
        self._timer = self.app.set_timer(DELAY, self._pause_over, name="journal")
        self.app.call_later(self.flush)  # after the handler making the edit has finished it

    def _pause_over(self) -> None:
        self._timer = None
        if self._more:
            self._more = False
            self.changed()

    def flush(self) -> None:
        """Snapshot the dirty documents now (UI thread) and write them in a worker."""
        ws = self.session.workspace
        if not self.ready or ws is None:
            return
        self._seq += 1
        self.app.run_worker(partial(self._write, unsaved(ws.docs), self._seq), name="journaling unsaved edits",
                            group="journal", thread=True, exit_on_error=False)

    def _write(self, snapshot: list, seq: int) -> None:
        try:
            self.journal.sync(snapshot, seq)
        except OSError as exc:
            self.app.call_from_thread(self._failed, f"{exc.filename or self.journal.folder}: {exc.strerror or exc}")
        else:
            self._error = None

    def _failed(self, message: str) -> None:
        if message != self._error:
            self._error = message
            self.app.notify(f"{message}\nUnsaved edits are not protected against a crash until this is fixed; ctrl+s saves them.",
                            title="Journal not written", severity="error", timeout=10)

    def close(self) -> None:
        """The app is quitting: clear the journal if nothing is unsaved, else write the last state."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self._claim is not None:  # quit with the offer still open: it stays for next time
            self._claim.release()
            self._claim = None
        ws = self.session.workspace
        if not self.ready or ws is None:
            return  # an old journal not yet offered back stays for next time
        self.ready = False
        try:
            self.journal.close(unsaved(ws.docs))
        except OSError as exc:
            self.app.log.error(f"journal not written at exit: {exc}")

    def release(self) -> None:
        """The app is gone without ``exit`` (unmounted while the process goes on, as under Pilot):
        let go of the locks and leave the entries for the next start, as the end of the process would."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self._claim is not None:
            self._claim.release()
            self._claim = None
        self.ready = False
        self.journal.release()

    def discard(self) -> None:
        """The user quits without saving: the unsaved edits are dropped on purpose."""
        if self.ready:
            self.ready = False
            self.journal.discard()

    # ------------------------------------------------------------ recovery
    def offer(self, screen: "WorkbenchScreen") -> None:
        """Once the workspace is first loaded: offer back what the journal holds, if anything."""
        if self.offered:
            return
        self.offered = True
        claimed = self._claim = claim(self.session.root)  # ended sessions only, locked while we offer them
        entries, items = [], []
        for entry in claimed.entries:
            disk = entry.disk()
            if disk == entry.data:
                continue  # the file already holds the edits (saved by another program): nothing to offer
            entries.append(entry)
            items.append(self.describe(entry, disk))
        if not entries:
            claimed.remove()  # entries that offered nothing
            self._claim = None
            self.ready = True
            self.changed()
            return

        def answered(yes: bool | None) -> None:
            self.ready = True
            self._claim = None
            if yes:
                self.journal.retire(claimed)  # removed once our own session holds the recovered edits
                self._recover(screen, entries, items)
            else:
                claimed.remove()
                n = len(entries)
                self.app.notify(f"Discarded the unsaved edits of {n} document{'s' if n != 1 else ''}.",
                                title="Recovery", timeout=4)

        self.app.push_screen(RecoveryScreen(items), answered)

    def describe(self, entry: JournalEntry, disk: bytes | None) -> RecoveryItem:
        label = self.session.label(entry.path)
        when = _dt.datetime.fromtimestamp(entry.timestamp).strftime("%Y-%m-%d %H:%M:%S")
        return RecoveryItem(label, entry.state(disk), when, entry.diff(label, disk), entry.older)

    def _recover(self, screen: "WorkbenchScreen", entries: list[JournalEntry], items: list[RecoveryItem]) -> None:
        gone = [e for e, i in zip(entries, items) if i.state == "deleted"]
        screen.editing.apply("Recovered", lambda: self.session.run(recover, entries))
        conflicts = [i.label for i in items if i.conflict]
        if conflicts:
            self.app.notify(f"{', '.join(conflicts)}: changed on disk since these edits. Your text is kept as unsaved "
                            "edits and nothing was written; ctrl+s would overwrite the file, u goes back to it.",
                            title="Recovered with conflicts", severity="warning", timeout=12)
        self.changed()
        if gone:
            self.app.scan_folder(self.session.root, screen)  # list the files that are gone (kept as unsaved)
