"""`wirecat export_chat CHAT_ID DEST`: the same zip as the page's link, written to a file,
never over one that exists."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from tests.chat_export.support import hostile_chat

pytestmark = pytest.mark.django_db


def test_the_command_writes_the_chats_zip_into_a_folder(tmp_path: Path) -> None:
    chat = hostile_chat()
    folder = tmp_path / "exports"
    folder.mkdir()
    call_command("export_chat", str(chat.pk), str(folder))
    written = folder / "Chat chat-1.zip"
    with zipfile.ZipFile(written) as archive:
        assert archive.testzip() is None
        names = archive.namelist()
    assert names[0] == "Chat chat-1.html" and "media/red.png" in names
    assert [p.name for p in folder.iterdir()] == ["Chat chat-1.zip"]  # no partial left
    with pytest.raises(CommandError, match="exists already"):
        call_command("export_chat", str(chat.pk), str(written))
    with pytest.raises(CommandError, match="does not exist"):
        call_command("export_chat", "999999", str(tmp_path / "other.zip"))
