"""Connecting on the Sync page when the provider cannot be reached or answers wrongly: each
live provider's failures (nothing listening, a name that does not resolve, a TLS server
that is not one, a refused token, "wait", a server error, an answer that is not the API's)
are one sentence saying what to check, shown once, with 422, never a 500 and never the
library's words ("ConnectError", "gaierror", "[Errno -2]"). And a failed connect changes
nothing it was not about: the other accounts' settings, the other forms' fields."""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django_celery_beat.models import PeriodicTask

from archive.connectors.reach import reach_sentence
from archive.sync.models import SyncAccount
from archive.sync.services.accounts import sync_connect
from tests.fixtures.imessage.chatdb import ChatDb
from tests.providers.bot_api import TOKEN, BotApi
from tests.providers.json_server import JsonServer
from tests.providers.unreachable import NO_SUCH_HOST, GarbageServer, closed_port

pytestmark = pytest.mark.django_db

BOTS = ["telegram_bot", "discord_bot", "max_bot"]
NAMES = {"telegram_bot": "Telegram", "discord_bot": "Discord", "max_bot": "MAX"}
RAW_WORDS = ["ConnectError", "gaierror", "Errno", "Traceback", "Server Error (500)", "connecting:"]


def shown_once(html: str, sentence: str) -> None:
    """`sentence` is on the page once, as an alert, and none of the library's words are."""
    text = re.sub(r"\s+", " ", html)
    assert text.count(sentence) == 1, sentence
    assert text.count('class="error" role="alert"') == 1
    for raw in RAW_WORDS:
        assert raw not in text, raw


def connect_bot(client: Client, kind: str, api_url: str, **extra: str) -> Any:
    return client.post(
        "/sync/connect/",
        {"kind": kind, "token": TOKEN, "interval": "300", "api_url": api_url, **extra},
    )


@pytest.fixture
def answering() -> Iterator[dict[str, Any]]:
    """A local server answering every call with the status and JSON set in the dict."""
    said: dict[str, Any] = {"status": 200, "body": {}, "headers": {}}
    server = JsonServer(lambda *_: (said["status"], said["body"], said["headers"]))
    said["url"] = server.origin
    yield said
    server.close()


@pytest.mark.parametrize("kind", BOTS)
def test_a_bot_whose_api_cannot_be_reached_is_told_in_a_sentence(
    owner_client: Client, kind: str, answering: dict[str, Any]
) -> None:
    who = NAMES[kind]
    port = closed_port()
    cases = [
        (f"http://127.0.0.1:{port}", f"{who} could not be reached: 127.0.0.1:{port} refused"),
        (f"http://{NO_SUCH_HOST}", f"the name {NO_SUCH_HOST} was not found (DNS)"),
        # A plain-HTTP server asked for TLS: the handshake fails.
        (answering["url"].replace("http://", "https://"), "the TLS handshake with 127.0.0.1"),
    ]
    for api_url, words in cases:
        answer = connect_bot(owner_client, kind, api_url)
        assert answer.status_code == 422, api_url
        html = answer.content.decode()
        shown_once(html, words)
        assert "— check" in html  # what to check, in the same sentence
    assert not SyncAccount.objects.exists()


@pytest.mark.parametrize("kind", BOTS)
@pytest.mark.parametrize(
    ("status", "body", "headers", "words"),
    [
        (
            401,
            {"ok": False, "error_code": 401, "message": "Unauthorized"},
            {},
            "refused the bot token",
        ),
        (429, {"ok": False, "retry_after": 30}, {"Retry-After": "30"}, "is limiting requests"),
        (502, {"message": "bad gateway"}, {}, "answered with a server error (HTTP 502"),
        (200, ["not", "an", "object"], {}, "with something its API does not answer"),
    ],
    ids=["bad-token", "rate-limited", "server-error", "unexpected-answer"],
)
def test_what_a_bot_api_answered_wrong_is_told_in_a_sentence(
    owner_client: Client,
    kind: str,
    answering: dict[str, Any],
    status: int,
    body: Any,
    headers: dict[str, str],
    words: str,
) -> None:
    answering.update(status=status, body=body, headers=headers)
    answer = connect_bot(owner_client, kind, answering["url"])
    assert answer.status_code == 422
    html = answer.content.decode()
    shown_once(html, words)
    said = re.search(r'<p class="error" role="alert">([^<]*)</p>', html)
    assert said is not None and said.group(1).startswith(f"{NAMES[kind]} ")
    assert "— check" in said.group(1) or "— wait" in said.group(1) or "— try" in said.group(1)
    assert not SyncAccount.objects.exists()


def test_an_answer_that_is_not_json_is_an_unexpected_answer(owner_client: Client) -> None:
    page = GarbageServer(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 14\r\n\r\n<h1>hello</h1>"
    )
    try:
        answer = connect_bot(owner_client, "telegram_bot", f"http://127.0.0.1:{page.port}")
    finally:
        page.close()
    assert answer.status_code == 422
    shown_once(answer.content.decode(), "Telegram answered getMe with something its API")


def test_a_mailbox_that_cannot_be_reached_is_told_once(owner_client: Client) -> None:
    not_imap = GarbageServer(b"SSH-2.0-OpenSSH_9.6\r\n", greets=True)
    port = closed_port()
    try:
        for host, extra, words in [
            ("127.0.0.1", {"port": str(port)}, f"127.0.0.1:{port} refused the connection"),
            (NO_SUCH_HOST, {}, f"the name {NO_SUCH_HOST} was not found (DNS)"),
            ("127.0.0.1", {"port": str(not_imap.port), "security": "plain"}, "as an IMAP server"),
        ]:
            answer = owner_client.post(
                "/sync/connect/",
                {"kind": "imap", "host": host, "username": "me", "password": "pw", **extra},
            )
            assert answer.status_code == 422, host
            html = answer.content.decode()
            shown_once(html, words)
            assert f'value="{host}"' in html  # what was typed stays; the password does not
            assert 'value="pw"' not in html
    finally:
        not_imap.close()


def _telethon_at(port: int) -> Any:
    """The login's client edge, as it is (Telethon's own TelegramClient) but pointed at a
    loopback port instead of Telegram's data centre, trying once."""
    from telethon import TelegramClient
    from telethon.sessions import StringSession

    def client(session: str, api_id: int, api_hash: str) -> Any:
        opened = StringSession(session)
        opened.set_dc(2, "127.0.0.1", port)
        return TelegramClient(
            opened, api_id, api_hash, connection_retries=0, retry_delay=0, timeout=5
        )

    return client


def test_telegram_account_login_when_telegram_cannot_be_reached_is_not_a_500(
    owner_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Telegram unreachable (nothing listening) and something not Telegram answering (a
    proxy): the login answered 500 before (Telethon's IncompleteReadError went through)."""
    from archive.connectors.telegram import login as telegram_login

    start = {
        "step": "start",
        "api_id": "12345",
        "api_hash": "0123456789abcdef0123456789abcdef",
        "phone": "+44 7700 900123",
    }
    proxy = GarbageServer(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" + b"x" * 80)
    try:
        for port, words in [
            (closed_port(), "Telegram could not be reached"),
            (proxy.port, "closed the connection without a proper answer"),
        ]:
            monkeypatch.setattr(telegram_login, "login_client", _telethon_at(port))
            answer = owner_client.post("/sync/telegram/", start)
            assert answer.status_code == 422
            html = answer.content.decode()
            shown_once(html, words)
            assert "a firewall or proxy may be blocking Telegram" in html
    finally:
        proxy.close()
    assert "telegram_login" not in owner_client.session


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (TimeoutError("timed out"), "did not answer in time"),
        (OSError(101, "Network is unreachable"), "seems to have no network connection"),
        (socket.gaierror(socket.EAI_AGAIN, "Temporary failure"), "no network connection"),
        (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), "was not found (DNS)"),
        (ConnectionRefusedError(111, "refused"), "refused the connection"),
        (asyncio.IncompleteReadError(b"x", 10), "closed the connection"),
        (ConnectionResetError(104, "reset"), "closed the connection"),
        (RuntimeError("odd"), "(RuntimeError)"),
    ],
)
def test_each_network_failure_is_one_sentence_with_what_to_check(
    exc: BaseException, kind: str
) -> None:
    wrapped = RuntimeError("outer")  # a library's own error around the socket's
    wrapped.__cause__ = exc
    for failure in (exc, wrapped):
        said = reach_sentence("Discord", failure, host="discord.com", port=443)
        assert kind in said and "— check" in said and said.endswith(".")
        assert said.count(".") <= 3  # one sentence (the host's dots aside)


# --- a failed connect touches nothing it was not about ------------------------------------


def _imessage(tmp_path: Path) -> SyncAccount:
    db = ChatDb(tmp_path / "chat.db")
    db.chat("iMessage;-;+15557654321", identifier="+15557654321")
    db.close()
    return sync_connect(
        kind="imessage",
        credentials={},
        settings={"path": str(tmp_path / "chat.db")},
        interval_seconds=60,
    )


def test_a_failed_bot_connect_leaves_every_other_account_and_form_as_it_was(
    owner_client: Client, tmp_path: Path, bot_api: BotApi
) -> None:
    apple = _imessage(tmp_path)
    bot = sync_connect(
        kind="telegram_bot",
        credentials={"token": TOKEN},
        settings={"api_url": bot_api.url},
        interval_seconds=900,
    )
    before = {
        s.pk: (s.interval_seconds, s.enabled, s.state, s.settings, s.credentials)
        for s in SyncAccount.objects.all()
    }
    schedules = {t.pk: (t.interval.every, t.enabled) for t in PeriodicTask.objects.all()}
    answer = connect_bot(
        owner_client, "discord_bot", f"http://127.0.0.1:{closed_port()}", interval="300"
    )
    assert answer.status_code == 422
    after = {
        s.pk: (s.interval_seconds, s.enabled, s.state, s.settings, s.credentials)
        for s in SyncAccount.objects.all()
    }
    assert after == before and {apple.pk, bot.pk} == set(after)
    assert {t.pk: (t.interval.every, t.enabled) for t in PeriodicTask.objects.all()} == schedules
    html = answer.content.decode()
    # Each form shows its own defaults, not what the Discord form sent.
    assert 'id="im-interval" name="interval" type="number" min="10" value="60"' in html
    assert 'id="imap-interval" name="interval" type="number" min="10" value="300"' in html
    assert 'id="discord_bot-interval" name="interval" type="number" min="10" value="300"' in html
    assert re.search(r'id="telegram_bot-api"[^>]*value=""', html)
    assert re.search(r'id="discord_bot-api"[^>]*value="http://127\.0\.0\.1:\d+"', html)
    # And the rows still say what is stored.
    row = re.search(rf'<input id="every-{apple.public_id}"[^>]*>', html)
    assert row is not None and 'value="60"' in row.group(0)


def test_the_interval_chosen_with_the_code_survives_the_password_step(
    owner_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from archive.connectors.live import register_live
    from archive.connectors.telegram import login as telegram_login
    from archive.connectors.telegram.user import TelegramUser
    from tests.providers.telethon_double import ClientDouble, LoginDouble

    double = ClientDouble()

    class WithTheDouble(TelegramUser):
        def __init__(self, credentials: Any, settings: Any) -> None:
            super().__init__(credentials, settings, client=double)

    monkeypatch.setattr(telegram_login, "login_client", LoginDouble)
    register_live("telegram_user", WithTheDouble)
    try:
        start = {
            "step": "start",
            "api_id": "12345",
            "api_hash": "0123456789abcdef0123456789abcdef",
            "phone": "+1 555 000 1111",
        }
        assert owner_client.post("/sync/telegram/", start).status_code == 302
        code = {"step": "code", "code": "24680", "interval": "45"}
        assert owner_client.post("/sync/telegram/", code).status_code == 302
        page = owner_client.get("/sync/").content.decode()
        assert 'name="interval" value="300"' not in page  # no hidden default to post back
        done = {"step": "password", "password": "correct horse"}
        assert owner_client.post("/sync/telegram/", done).status_code == 302
    finally:
        register_live("telegram_user", TelegramUser)
    assert SyncAccount.objects.get().interval_seconds == 45


# --- Apple Messages: the words fit the machine ---------------------------------------------


def test_the_apple_messages_form_fits_the_machine(
    owner_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from archive.sync import views as sync_views

    monkeypatch.setattr(sync_views, "on_macos", lambda: False)
    linux = owner_client.get("/sync/").content.decode()
    assert "on this Mac" not in linux and "Full Disk Access" not in linux
    assert "This machine is not a Mac" in linux and "sms.db" in linux
    monkeypatch.setattr(sync_views, "on_macos", lambda: True)
    mac = owner_client.get("/sync/").content.decode()
    assert "Messages' own database on this Mac" in mac and "Full Disk Access" in mac
