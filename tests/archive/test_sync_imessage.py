"""Apple Messages live sync: a chat.db that grows between polls, read past the last ROWID,
never written beside; sending says it needs macOS here."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from archive.connectors.imessage import live as imessage_live
from archive.connectors.imessage.live import IMessageLive
from archive.connectors.live import LiveError
from archive.connectors.sending import OutboundMessage, SendError
from archive.store.models import Chat, ConnectorState, Message
from archive.sync.services.accounts import sync_connect
from archive.sync.services.run import account_sync
from tests.fixtures.imessage.chatdb import ChatDb
from wirecat.errors import Invalid

pytestmark = pytest.mark.django_db

T0 = datetime(2025, 6, 1, 8, 0, tzinfo=UTC)
PHONE = "+15557654321"
DM_GUID = f"iMessage;-;{PHONE}"


def test_a_growing_chat_db_is_read_past_the_last_rowid_and_never_written_beside(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "Messages"
    db = ChatDb(folder / "chat.db")
    phone = db.handle(PHONE)
    dm = db.chat(DM_GUID, identifier=PHONE, handles=[phone])
    for n in range(5):
        db.message(f"G-{n}", chat=dm, at=T0 + timedelta(minutes=n), text=f"hi {n}", handle_id=phone)
    db.db.commit()  # Messages.app keeps the database open and writes through its WAL
    sync = sync_connect(kind="imessage", credentials={}, settings={"path": str(folder / "chat.db")})
    assert (sync.account.provider, sync.account.name) == ("imessage", "Apple Messages")
    before = sorted(p.name for p in folder.iterdir())

    first = account_sync(sync_account_id=sync.pk)
    assert first is not None and (first.outcome, first.added) == ("done", 5)
    assert ConnectorState.objects.get(account=sync.account).cursor == {"rowid": 5}

    db.message("G-5", chat=dm, at=T0 + timedelta(minutes=9), text="on my way", is_from_me=1)
    db.message(
        "T-LOVE",
        chat=dm,
        at=T0 + timedelta(minutes=10),
        text="Loved “on my way”",
        handle_id=phone,
        associated_message_guid="p:0/G-5",
        associated_message_type=2000,
    )
    db.message("G-6", chat=dm, at=T0 + timedelta(minutes=11), text="see you", handle_id=phone)
    db.db.commit()
    second = account_sync(sync_account_id=sync.pk)
    assert second is not None and second.added == 2  # a tapback is not a message
    assert ConnectorState.objects.get(account=sync.account).cursor == {"rowid": 8}
    mine = Message.objects.get(external_id="G-5")
    assert mine.direction == "out" and mine.provider_metadata["reactions"][0]["type"] == "love"
    assert Chat.objects.get(account=sync.account).external_id == DM_GUID
    assert Message.objects.filter(account=sync.account).count() == 7
    assert sorted(p.name for p in folder.iterdir()) == before  # nothing written beside it
    db.close()


def test_without_a_chat_db_path_off_macos_it_says_it_needs_macos(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(imessage_live, "on_macos", lambda: False)
    with pytest.raises(Invalid, match="needs macOS"):
        sync_connect(kind="imessage", credentials={}, settings={})


def test_on_macos_the_mac_s_own_chat_db_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(imessage_live, "on_macos", lambda: True)
    connector = IMessageLive({}, {})
    assert connector._path == Path("~/Library/Messages/chat.db").expanduser()


def test_sending_off_macos_says_it_needs_macos(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(imessage_live, "on_macos", lambda: False)
    connector = IMessageLive({}, {"path": str(tmp_path / "chat.db")})
    with pytest.raises(SendError, match="needs macOS"):
        connector.send(OutboundMessage("a", DM_GUID, "hello", None, "snd_1"))
    with pytest.raises(LiveError, match="no such file"):
        connector.connect()


def test_the_sync_page_connects_a_chat_db_and_explains_a_wrong_path(
    tmp_path: Path, owner_client: Any, django_capture_on_commit_callbacks: Any
) -> None:
    db = ChatDb(tmp_path / "chat.db")
    db.chat(DM_GUID, identifier=PHONE)
    db.close()
    for path, words in [
        ("relative/chat.db", "a full path on this machine"),
        (str(tmp_path / "missing.db"), "no such file"),
        (str(tmp_path), "no such file"),
    ]:
        answer = owner_client.post("/sync/connect/", {"kind": "imessage", "path": path})
        assert answer.status_code == 422 and words in answer.content.decode()
    with django_capture_on_commit_callbacks() as callbacks:
        done = owner_client.post(
            "/sync/connect/", {"kind": "imessage", "path": str(tmp_path / "chat.db")}
        )
    assert done.status_code == 302 and len(callbacks) == 1
    assert "Apple Messages (chat.db)" in owner_client.get("/sync/").content.decode()
