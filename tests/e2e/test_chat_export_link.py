"""The chat page's ⋯ menu offers the export, and following it downloads the zip."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.chat_export.support import hostile_chat
from tests.e2e.test_import_page import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_menu_downloads_the_chats_zip(
    live_server: Any, page: Any, artifacts_dir: Path, tmp_path: Path
) -> None:
    chat = hostile_chat()
    sign_in(page, live_server)
    page.goto(f"{live_server.url}/chats/{chat.pk}/")
    page.get_by_title("More about this chat").click()
    link = page.get_by_role("link", name="Export this chat (HTML)")
    assert link.is_visible()
    page.screenshot(path=str(artifacts_dir / "chat-export-menu.png"))
    with page.expect_download() as info:
        link.click()
    download = info.value
    assert download.suggested_filename == "Chat chat-1.zip"
    saved = tmp_path / "saved.zip"
    download.save_as(saved)
    with zipfile.ZipFile(saved) as archive:
        assert archive.testzip() is None
        assert "Chat chat-1.html" in archive.namelist() and "media/red.png" in archive.namelist()
