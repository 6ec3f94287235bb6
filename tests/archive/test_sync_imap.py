"""Live sync of mail over IMAP, against a real Dovecot on loopback: folders in UID order
from a per-folder UIDVALIDITY + UID cursor, threads, the owner's own mail, attachments,
a recreated folder read again without duplicates, nothing marked read, refused logins."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any, BinaryIO

import pytest
from django.test import Client

from archive.connectors.live import Page, register_live
from archive.connectors.mail.imap import Imap
from archive.store.blobs import blob_open
from archive.store.models import Attachment, Chat, ConnectorState, Message
from archive.sync.models import SyncAccount
from archive.sync.services.accounts import sync_connect
from archive.sync.services.run import account_sync
from tests.providers.dovecot import PASSWORD, USER, Dovecot, dovecot, mail
from wirecat.errors import Invalid

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture
def imap() -> Iterator[Dovecot]:
    with dovecot() as server:
        yield server


def connect(server: Dovecot, password: str = PASSWORD) -> SyncAccount:
    return sync_connect(
        kind="imap",
        credentials={"password": password},
        settings={
            "host": server.host,
            "port": server.port,
            "security": "plain",
            "username": USER,
        },
    )


def test_a_refused_login_is_a_clear_error_and_never_logged(
    imap: Dovecot, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(Invalid, match=f"refused the login of {USER}"):
        connect(imap, password="not-the-password")
    assert not SyncAccount.objects.exists()
    sync = connect(imap)
    assert (sync.account.provider, sync.account.external_id) == ("mail", USER)
    logged = "\n".join(f"{r.getMessage()} {r.args!r}" for r in caplog.records)
    assert PASSWORD not in logged and "not-the-password" not in logged


def test_folders_are_read_in_uid_order_then_only_what_is_new(imap: Dovecot) -> None:
    imap.append("INBOX", mail(1, subject="Trip", text="Shall we go in May?"))
    imap.append(
        "INBOX", mail(2, subject="Trip", reply_to=1, attachment=("route.gpx", b"<gpx>route</gpx>"))
    )
    for n in range(3, 121):
        imap.append("INBOX", mail(n, subject=f"Note {n}"))
    imap.append(
        "Sent",
        mail(200, sender=USER, to="ann@example.org", subject="Trip", reply_to=2, references=[1, 2]),
    )
    imap.append("Sent", mail(1, subject="Trip", text="Shall we go in May?"))  # also in INBOX
    sync = connect(imap)
    run = account_sync(sync_account_id=sync.pk, page_size=50)
    assert run is not None and (run.outcome, run.added) == ("done", 121)
    trip = Chat.objects.get(title="Trip")
    assert trip.kind == "thread"
    texts = list(
        Message.objects.filter(chat=trip).order_by("sent_at").values_list("text", "direction")
    )
    assert texts[0] == ("Shall we go in May?", "in") and texts[-1][1] == "out"
    reply = Message.objects.get(external_id="m2@example.org")
    assert reply.reply_to is not None and reply.reply_to.external_id == "m1@example.org"
    attachment = Attachment.objects.get(message=reply)
    assert attachment.file_name == "route.gpx" and attachment.path is not None
    with blob_open(attachment.path) as stored:
        assert stored.read() == b"<gpx>route</gpx>"
    cursor = ConnectorState.objects.get(account=sync.account, stream="imap").cursor
    assert cursor["folders"]["INBOX"]["uid"] == 120
    assert cursor["folders"]["Sent"]["uid"] == 2

    client = imap.client()  # syncing read with BODY.PEEK: nothing is marked read
    client.select("INBOX", readonly=True)
    _, flags = client.uid("FETCH", "1:*", "(FLAGS)")
    client.logout()
    assert not any(b"\\Seen" in line for line in flags)

    imap.append("INBOX", mail(121, subject="Late"))
    again = account_sync(sync_account_id=sync.pk)
    assert again is not None and again.added == 1
    assert Message.objects.count() == 122


def test_a_recreated_folder_is_read_again_without_duplicates(imap: Dovecot) -> None:
    for n in range(1, 11):
        imap.append("Archive", mail(n))
    sync = connect(imap)
    account_sync(sync_account_id=sync.pk)
    before = ConnectorState.objects.get(account=sync.account).cursor["folders"]["Archive"]
    imap.recreate("Archive")  # a new UIDVALIDITY: UIDs from 1 again, meaning other mail
    for n in range(1, 12):
        imap.append("Archive", mail(n))
    run = account_sync(sync_account_id=sync.pk)
    assert run is not None and (run.fetched, run.added) == (11, 1)
    after = ConnectorState.objects.get(account=sync.account).cursor["folders"]["Archive"]
    assert after["uidvalidity"] != before["uidvalidity"] and after["uid"] == 11
    assert Message.objects.count() == 11


def test_the_sync_page_connects_a_mailbox_and_explains_bad_input(
    imap: Dovecot, owner_client: Client, django_capture_on_commit_callbacks: Any
) -> None:
    form = {
        "kind": "imap",
        "host": imap.host,
        "port": str(imap.port),
        "security": "plain",
        "username": USER,
        "password": PASSWORD,
        "interval": "120",
    }
    for change, words in [
        ({"host": "imap.example.org/evil"}, "server: a host name"),
        ({"port": "99999"}, "port: a number from 1 to 65535"),
        ({"security": "rot13"}, "security: ssl, starttls or plain"),
        ({"password": "wrong"}, f"refused the login of {USER}"),
    ]:
        answer = owner_client.post("/sync/connect/", {**form, **change})
        assert answer.status_code == 422 and words in answer.content.decode()
        assert PASSWORD not in answer.content.decode()
    with django_capture_on_commit_callbacks() as callbacks:
        assert owner_client.post("/sync/connect/", form).status_code == 302
    assert len(callbacks) == 1
    page = owner_client.get("/sync/").content.decode()
    assert USER in page and "Mail (IMAP)" in page and PASSWORD not in page


def _unreadable() -> BinaryIO:
    raise OSError("the part could not be read")


class UnreadableParts(Imap):
    """The IMAP connector as it is, except that no attachment's bytes can be read."""

    def fetch(self, cursor: Mapping[str, Any], limit: int) -> Page:
        page = super().fetch(cursor, limit)
        if page.batch is None:
            return page
        messages = tuple(
            replace(m, attachments=tuple(replace(a, content=_unreadable) for a in m.attachments))
            for m in page.batch.messages
        )
        return replace(page, batch=replace(page.batch, messages=messages))


def test_an_attachment_that_cannot_be_read_leaves_its_message_recorded(
    imap: Dovecot, caplog: pytest.LogCaptureFixture
) -> None:
    """The staging policy imports have: the attachment is kept as its metadata without
    bytes, marked and counted; the message, and the page it came in, are recorded."""
    caplog.set_level(logging.INFO)
    imap.append("INBOX", mail(1, subject="Trip", attachment=("route.gpx", b"<gpx>route</gpx>")))
    imap.append("INBOX", mail(2, subject="Trip", reply_to=1))
    register_live("imap", UnreadableParts)
    try:
        sync = connect(imap)
        run = account_sync(sync_account_id=sync.pk)
    finally:
        register_live("imap", Imap)
    assert run is not None and (run.outcome, run.added, run.error) == ("done", 2, "")
    attachment = Attachment.objects.get()
    assert attachment.message.external_id == "m1@example.org"
    assert (attachment.file_name, attachment.path) == ("route.gpx", None)
    assert attachment.provider_metadata["file_missing"] is True
    assert "1 attachments could not be read" in caplog.text
    assert ConnectorState.objects.get(account=sync.account).cursor["folders"]["INBOX"]["uid"] == 2
