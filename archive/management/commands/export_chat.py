"""`wirecat export_chat CHAT_ID DEST`: one chat as a zip (its page and its media), as the
chat page's "Export this chat" link makes it, written to a file. For a chat too long to
download within the web server's time for one request."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from archive.store.chat_export import export_title
from archive.store.selectors import chat_get
from archive.web.chat_export import chat_export_zip
from wirecat.errors import WireCatError


class Command(BaseCommand):
    help = "Write one chat as a zip (an HTML page and its media folder) to DEST."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("chat_id", type=int, help="The chat's number (as in /chats/N/).")
        parser.add_argument(
            "dest", help="A folder (the zip is named after the chat) or a new .zip file."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            chat = chat_get(chat_id=options["chat_id"])
        except WireCatError as exc:
            raise CommandError(str(exc)) from exc
        dest = Path(options["dest"]).expanduser()
        if dest.is_dir():
            dest = dest / f"{export_title(chat)}.zip"
        if dest.exists():
            raise CommandError(f"{dest} exists already: name a new file or a folder")
        if not dest.parent.is_dir():
            raise CommandError(f"{dest.parent} is not a folder")
        # Written beside its place and renamed into it: never a half-written zip under its name.
        fd, partial = tempfile.mkstemp(prefix=".export-", suffix=".zip", dir=dest.parent)
        try:
            with os.fdopen(fd, "wb") as out:
                for piece in chat_export_zip(chat):
                    out.write(piece)
            os.replace(partial, dest)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise
        self.stdout.write(self.style.SUCCESS(f"Wrote {dest} ({dest.stat().st_size:,} bytes)"))
