"""The sink keeps the public id a record brings (an exported message's, an attachment's)
when it is well-formed and free, gives a new one otherwise, and never fails the batch."""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from archive.store.domain import AttachmentRecord, MessageRecord
from archive.store.ids import new_public_id
from archive.store.models import Attachment, Message
from archive.store.sink import batch_record
from archive.store.sink.public_ids import public_id_well_formed
from tests.factories import batch, message

pytestmark = pytest.mark.django_db

PROBE = "SELECT public_id FROM"


def _with_file(record: MessageRecord, public_id: str | None) -> MessageRecord:
    file = AttachmentRecord(external_id="f1", file_name="a.txt", public_id=public_id)
    return replace(record, attachments=(file,))


def _ids(external_id: str) -> tuple[str, str]:
    stored = Message.objects.get(external_id=external_id)
    return stored.public_id, stored.attachments.get().public_id


def test_an_id_given_and_free_is_used() -> None:
    msg, att = new_public_id("msg"), new_public_id("att")
    with CaptureQueriesContext(connection) as queries:
        result = batch_record(batch=batch(_with_file(message("m1", public_id=msg), att)))
    assert result.added == 1
    assert _ids("m1") == (msg, att)
    # one probe per table for the batch
    assert sum(PROBE in q["sql"] for q in queries.captured_queries) == 2


def test_an_id_already_taken_gets_a_new_one_and_the_batch_succeeds() -> None:
    batch_record(batch=batch(_with_file(message("m1"), None)))
    msg, att = _ids("m1")
    again = new_public_id("msg")
    result = batch_record(
        batch=batch(
            _with_file(message("m2", public_id=msg, minutes=1), att),
            message("m3", public_id=again, minutes=2),
            message("m4", public_id=again, minutes=3),  # the same id twice in one batch
        )
    )
    assert result.added == 3
    new_msg, new_att = _ids("m2")
    assert new_msg != msg and new_att != att
    assert public_id_well_formed("msg", new_msg) and public_id_well_formed("att", new_att)
    assert _ids("m1") == (msg, att)  # the holder keeps it
    assert Message.objects.get(external_id="m3").public_id == again
    assert public_id_well_formed("msg", Message.objects.get(external_id="m4").public_id)
    assert Message.objects.filter(public_id=again).count() == 1


@pytest.mark.parametrize(
    ("msg", "att"),
    [
        ("msg_nope", "att_nope"),
        ("", ""),
        (new_public_id("att"), new_public_id("msg")),  # the wrong kind
        (new_public_id("msg").lower(), new_public_id("att") + "X"),
        ("msg_8" + "0" * 25, "att_" + "I" * 26),  # not a ULID: too large, not Crockford's
    ],
)
def test_a_malformed_id_gets_a_new_one(msg: str, att: str) -> None:
    batch_record(batch=batch(_with_file(message("m1", public_id=msg), att)))
    got_msg, got_att = _ids("m1")
    assert got_msg != msg and got_att != att
    assert public_id_well_formed("msg", got_msg) and public_id_well_formed("att", got_att)


def test_an_existing_message_keeps_its_id_on_redelivery() -> None:
    batch_record(batch=batch(_with_file(message("m1", "first"), None)))
    msg, att = _ids("m1")
    other_msg, other_att = new_public_id("msg"), new_public_id("att")
    redelivered = _with_file(message("m1", "edited", public_id=other_msg), other_att)
    result = batch_record(batch=batch(redelivered))
    assert result.updated == 1 and result.added == 0
    assert _ids("m1") == (msg, att)
    assert Message.objects.get(public_id=msg).text == "edited"
    assert not Message.objects.filter(public_id=other_msg).exists()
    assert not Attachment.objects.filter(public_id=other_att).exists()


def test_a_new_file_of_a_stored_message_keeps_its_id_when_free() -> None:
    batch_record(batch=batch(message("m1")))
    att = new_public_id("att")
    batch_record(batch=batch(_with_file(message("m1"), att)))
    assert Message.objects.get(external_id="m1").attachments.get().public_id == att


def test_a_batch_bringing_no_ids_asks_the_store_nothing_more() -> None:
    with CaptureQueriesContext(connection) as queries:
        batch_record(batch=batch(_with_file(message("m1"), None), message("m2", minutes=1)))
    assert not any(PROBE in q["sql"] for q in queries.captured_queries)
    assert all(public_id_well_formed("msg", m.public_id) for m in Message.objects.all())
