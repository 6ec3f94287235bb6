"""Live sync of the owner's own Telegram account through the Telethon connector: the
translation of Telethon's TL objects, dialogs read forward from `min_id`, a FloodWait, a
revoked session, the repair pass and sends, orchestrated against a client double at the
library's edge (tests/providers/telethon_double.py)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from telethon import types

from archive.connectors.live import register_live
from archive.connectors.sending import OutboundMessage
from archive.connectors.telegram.user import TelegramUser
from archive.store.models import Chat, ConnectorState, Message, MessageRevision
from archive.sync.models import SyncAccount
from archive.sync.services.accounts import sync_connect
from archive.sync.services.run import account_sync, accounts_repair
from tests.providers.telethon_double import ANNA, GROUP, ME, T0, ClientDouble

pytestmark = pytest.mark.django_db

SESSION = "1AABBCCsealed-session-string-for-tests"


@pytest.fixture
def client() -> Iterator[ClientDouble]:
    double = ClientDouble()

    class WithTheDouble(TelegramUser):  # the connector as it is, its client the double
        def __init__(self, credentials: Any, settings: Any) -> None:
            super().__init__(credentials, settings, client=double)

    register_live("telegram_user", WithTheDouble)
    yield double
    register_live("telegram_user", TelegramUser)


def connect() -> SyncAccount:
    return sync_connect(
        kind="telegram_user",
        credentials={"session": SESSION, "api_id": 12345, "api_hash": "0123456789abcdef"},
    )


def chatter(client: ClientDouble) -> None:
    client.say(ANNA, ANNA, 1, "hi, are you coming?")
    client.say(ANNA, ME, 2, "yes", reply_to=types.MessageReplyHeader(reply_to_msg_id=1))
    for n in range(1, 131):
        client.say(GROUP, ANNA if n % 2 else ME, n, f"trail {n}")
    service = types.MessageService(
        id=131,
        peer_id=types.PeerChannel(GROUP.id),
        date=T0 + timedelta(hours=5),
        action=types.MessageActionChatEditTitle(title="Hikers 2025"),
        from_id=types.PeerUser(ANNA.id),
    )
    client.messages[-1000000000333].append(service)


def test_dialogs_are_read_forward_and_named_as_an_export_names_them(client: ClientDouble) -> None:
    sync = connect()
    assert (sync.account.provider, sync.account.external_id, sync.account.name) == (
        "telegram",
        "111",
        "Owner Person",
    )
    chatter(client)
    run = account_sync(sync_account_id=sync.pk, page_size=100)
    assert run is not None and (run.outcome, run.added) == ("done", 133)
    dm = Chat.objects.get(external_id="222")
    assert (dm.kind, dm.title) == ("dm", "Anna")
    group = Chat.objects.get(external_id="333")
    assert (group.kind, group.title) == ("group", "Hikers")
    yes = Message.objects.get(chat=dm, external_id="2")
    assert (
        yes.direction == "out" and yes.reply_to is not None and yes.reply_to.text.startswith("hi")
    )
    assert yes.sender is not None and yes.sender.external_id == "user111"
    first = Message.objects.get(chat=group, external_id="1")
    assert first.sender is not None and first.sender.display_name == "Anna"
    renamed = Message.objects.get(chat=group, external_id="131")
    assert renamed.kind == "service" and "Hikers 2025" in renamed.text
    cursor = ConnectorState.objects.get(account=sync.account, stream="telegram_user").cursor
    assert cursor == {"dialogs": {"222": 2, "-1000000000333": 131}}

    client.say(GROUP, ANNA, 132, "new one")
    again = account_sync(sync_account_id=sync.pk)
    assert again is not None and again.added == 1
    assert sorted(c[1]["min_id"] for c in client.calls[-2:]) == [2, 131]


def test_a_flood_wait_is_waited_out_and_a_revoked_session_stops_the_account(
    client: ClientDouble, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    sync = connect()
    chatter(client)
    client.flood_wait_on = {2}
    sleeps: list[float] = []
    run = account_sync(sync_account_id=sync.pk, sleep=sleeps.append)
    assert sleeps == [7.0] and run is not None and run.added == 133
    client.revoked = True
    stopped = account_sync(sync_account_id=sync.pk)
    assert stopped is not None and stopped.outcome == "credentials"
    assert "Telegram ended the session" in stopped.error
    sync.refresh_from_db()
    assert sync.state == "failed"
    logged = "\n".join(f"{r.getMessage()} {r.args!r}" for r in caplog.records)
    assert SESSION not in logged and "0123456789abcdef" not in logged


def test_the_repair_pass_reads_again_from_a_date_and_records_edits(client: ClientDouble) -> None:
    sync = connect()
    chatter(client)
    account_sync(sync_account_id=sync.pk)
    before = ConnectorState.objects.get(account=sync.account).cursor
    edited = client.messages[-1000000000333][9]
    edited.message = "trail 10, moved to Sunday"
    edited.edit_date = T0 + timedelta(days=1)
    del client.messages[-1000000000333][20]  # trail 21, deleted in the app
    runs = accounts_repair(hours=24 * 365 * 30)
    assert [(r.outcome, r.updated, r.deleted) for r in runs] == [("repaired", 1, 1)]
    assert Message.objects.get(chat__external_id="333", external_id="21").deleted_at is not None
    message = Message.objects.get(chat__external_id="333", external_id="10")
    assert message.text == "trail 10, moved to Sunday"
    assert MessageRevision.objects.get(message=message).text == "trail 10"
    assert ConnectorState.objects.get(account=sync.account).cursor == before


def test_a_send_goes_to_the_dialog_as_a_reply(client: ClientDouble) -> None:
    connector = TelegramUser({}, {}, client=client)
    sent = connector.send(OutboundMessage("111", "222", "see you at 8", "1", "snd_x"))
    connector.close()
    assert sent == "9001"
    assert [(entity.id, text, reply) for entity, text, reply in client.sent] == [
        (222, "see you at 8", 1)
    ]


def test_a_session_is_needed() -> None:
    from archive.connectors.live import CredentialError

    with pytest.raises(CredentialError, match="log in on the Sync page"):
        TelegramUser({}, {})


def test_logging_in_on_the_sync_page_phone_code_then_password(
    client: ClientDouble,
    owner_client: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from archive.connectors.telegram import login as telegram_login
    from archive.sync.credentials import unseal
    from tests.providers.telethon_double import LoginDouble

    monkeypatch.setattr(telegram_login, "login_client", LoginDouble)
    url = "/sync/telegram/"
    api_hash = "0123456789abcdef0123456789abcdef"
    start = {"step": "start", "api_id": "12345", "api_hash": api_hash, "phone": "+1 555 000 1111"}
    for change, words in [
        ({"api_hash": "nope"}, "API hash: the 32 hexadecimal characters"),
        ({"api_id": "12x"}, "API id: the number"),
        ({"phone": "call me"}, "with its country code"),
        ({"phone": "+44 7700 900123"}, "phone: Telegram does not know this number"),
        ({"api_id": "999"}, "API id and hash: refused"),
    ]:
        answer = owner_client.post(url, {**start, **change})
        assert answer.status_code == 422 and words in answer.content.decode()
    assert owner_client.post(url, start).status_code == 302
    page = owner_client.get("/sync/").content.decode()
    assert "Login code" in page and api_hash not in page

    wrong = owner_client.post(url, {"step": "code", "code": "11111"})
    assert wrong.status_code == 422 and "not the code Telegram sent" in wrong.content.decode()
    assert owner_client.post(url, {"step": "code", "code": "24680"}).status_code == 302
    assert "Two-step verification password" in owner_client.get("/sync/").content.decode()
    bad = owner_client.post(url, {"step": "password", "password": "guess"})
    assert (
        bad.status_code == 422 and "not your two-step verification password" in bad.content.decode()
    )
    with django_capture_on_commit_callbacks() as callbacks:
        done = owner_client.post(url, {"step": "password", "password": "correct horse"})
    assert done.status_code == 302 and len(callbacks) == 1
    sync = SyncAccount.objects.get()
    assert (sync.kind, sync.account.external_id) == ("telegram_user", "111")
    assert unseal(sync.credentials) == {
        "session": "session-logged-in",
        "api_id": 12345,
        "api_hash": api_hash,
    }
    page = owner_client.get("/sync/").content.decode()
    assert "Owner Person" in page and "Send me a code" in page  # the login is over
    assert "session-logged-in" not in page and api_hash not in page
    assert "telegram_login" not in owner_client.session


def test_an_agent_send_goes_through_the_guard_to_the_account(client: ClientDouble) -> None:
    from tests.archive.sync_support import agent_send

    sync = connect()
    chatter(client)
    account_sync(sync_account_id=sync.pk)
    dm = Chat.objects.get(external_id="222")
    response, _ = agent_send(
        sync.account,
        dm,
        "leaving now",
        reply_to=Message.objects.get(chat=dm, external_id="1"),
        key="leave-1",
    )
    assert [(entity.id, text, reply) for entity, text, reply in client.sent] == [
        (222, "leaving now", 1)
    ]
    outbound = Message.objects.get(public_id=response.json()["message_id"])
    assert outbound.provider_metadata["provider_id"] == "9001"


def test_the_repair_pass_tombstones_a_dialog_whose_window_was_emptied(
    client: ClientDouble,
) -> None:
    sync = connect()
    chatter(client)
    account_sync(sync_account_id=sync.pk)
    client.messages[ANNA.id].clear()  # the whole conversation deleted in the app
    runs = accounts_repair(hours=24 * 365 * 30)
    assert [(r.outcome, r.deleted) for r in runs] == [("repaired", 2)]
    assert not Message.objects.filter(chat__external_id="222", deleted_at__isnull=True).exists()
    assert not Message.objects.filter(chat__external_id="333", deleted_at__isnull=False).exists()
