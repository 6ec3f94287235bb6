"""Apple Messages, live: poll `chat.db` for messages past the last ROWID recorded.

The reading is the importer's (export.py): the database is opened
read-only and immutable (a copy when its WAL holds messages), nothing is ever written
beside it, text comes from `attributedBody` where `text` is empty, tapbacks fold into
their targets. The cursor is the last ROWID read. Sending goes through Messages.app with
AppleScript (`osascript`), which exists only on macOS; elsewhere the connector says so.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from archive.connectors.base import FormatError, ImportItem, ReadOptions
from archive.connectors.imessage.export import PROVIDER, poll_reading
from archive.connectors.live import Capabilities, Connected, LiveError, Page
from archive.connectors.sending import OutboundMessage, SendError
from archive.store.domain import Batch

MACOS_DATABASE = Path("~/Library/Messages/chat.db")
MAX_LIMIT = 2_000
SEND_TIMEOUT_SECONDS = 30

# The chat is named by its guid (what Messages calls it); the text is passed as an argument,
# never put inside the script, so nothing in a message can change what the script does.
_SEND_SCRIPT = """on run argv
  tell application "Messages"
    send (item 2 of argv) to chat id (item 1 of argv)
  end tell
end run"""


def on_macos() -> bool:
    """Whether Messages.app can be here (the tests answer for either system)."""
    return sys.platform == "darwin"


class IMessageLive:
    kind: ClassVar[str] = "imessage"
    provider: ClassVar[str] = PROVIDER
    label: ClassVar[str] = "Apple Messages (chat.db)"
    # It sends where Messages.app is; elsewhere `send` says it needs macOS.
    capabilities: ClassVar[Capabilities] = Capabilities(history=True, live=True, send=True)

    def __init__(self, credentials: Mapping[str, Any], settings: Mapping[str, Any]) -> None:
        given = str(settings.get("path") or "")
        if not given and not on_macos():
            raise LiveError(
                "Apple Messages needs macOS for its own chat.db — on this machine, name a"
                " chat.db copied from a Mac, or an iPhone backup's sms.db."
            )
        self._path = Path(given or MACOS_DATABASE).expanduser()
        self._account_name = str(settings.get("account_name") or "") or None

    def close(self) -> None:
        pass

    def _options(self) -> ReadOptions:
        return ReadOptions(account_name=self._account_name, source_name=self._path.name)

    def connect(self) -> Connected:
        if not self._path.is_file():
            if on_macos():
                raise LiveError(
                    f"{self._path}: no such file — check the path; Messages' own database"
                    " also needs Full Disk Access for WireCat (System Settings → Privacy &"
                    " Security)."
                )
            raise LiveError(
                f"{self._path}: no such file on this machine — name a chat.db copied from"
                " a Mac, or an iPhone backup's sms.db."
            )
        try:
            with poll_reading(self._path, self._options(), after=0) as reading:
                account = reading.account
        except FormatError as exc:
            raise LiveError(str(exc)) from None
        return Connected(
            account_external_id=account.external_id,
            account_name=account.name,
            settings={"path": str(self._path)},
        )

    def fetch(self, cursor: Mapping[str, Any], limit: int) -> Page:
        after = int(cursor.get("rowid") or 0)
        limit = max(1, min(limit, MAX_LIMIT))
        items: list[ImportItem] = []
        more = False
        try:
            with poll_reading(self._path, self._options(), after=after) as reading:
                account = reading.account
                last = after
                for item in reading.items():
                    items.append(item)
                    last = reading.last_rowid
                    if len(items) >= limit:
                        more = True
                        break
                else:
                    last = max(last, reading.last_rowid or after)
        except FormatError as exc:
            raise LiveError(str(exc)) from None
        if not items:
            return Page(batch=None, cursor={"rowid": last}, more=False)
        batch = Batch.from_items(account, items, cursor={"rowid": last}, cursor_stream=self.kind)
        return Page(batch=batch, cursor={"rowid": last}, more=more)

    def rewind(self, cursor: Mapping[str, Any], since: datetime) -> dict[str, Any] | None:
        return None

    def send(self, message: OutboundMessage) -> str:
        osascript = shutil.which("osascript")
        if not on_macos() or osascript is None:
            raise SendError("sending iMessage needs macOS (osascript and Messages.app)")
        try:
            done = subprocess.run(
                [osascript, "-e", _SEND_SCRIPT, message.chat_external_id, message.text],
                capture_output=True,
                timeout=SEND_TIMEOUT_SECONDS,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SendError(f"Messages.app did not answer: {type(exc).__name__}") from None
        if done.returncode != 0:
            raise SendError(f"Messages.app refused: {done.stderr.decode(errors='replace')[:200]}")
        return ""  # Messages.app does not say; the sent message arrives with the next poll
