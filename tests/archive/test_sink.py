"""The single write path: idempotence, edits, tombstones, atomicity, cursor, FTS sync."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection

from archive.store.domain import (
    MAX_BATCH_MESSAGES,
    AttachmentRecord,
    Batch,
    ChatRecord,
    DeletionRecord,
    IdentityRecord,
    MessageRecord,
)
from archive.store.models import (
    Account,
    Attachment,
    Chat,
    ConnectorState,
    Identity,
    Message,
    MessageRevision,
    WriteOutsideSink,
)
from archive.store.services.maintenance import (
    BULK_CRISISMERGE,
    FTS_AUTOMERGE,
    FTS_CRISISMERGE,
    fts_bulk_writes,
    fts_merge_backlog,
    store_optimize,
)
from archive.store.sink import FTS_TABLES, STORED_IDS_SQL, batch_record, message_purge
from tests.factories import ACCOUNT, T0, batch, message
from wirecat.errors import Invalid

pytestmark = pytest.mark.django_db


def fts_rowids(table: str, query: str) -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH %s", [query])
        return {row[0] for row in cursor.fetchall()}


def fts_integrity(table: str) -> None:
    """FTS5's own check that the index matches the content table (raises if not)."""
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")


def test_first_delivery_records_everything() -> None:
    result = batch_record(
        batch=batch(message("1", "hello world"), message("2", "second", minutes=1))
    )
    assert (result.added, result.updated, result.unchanged, result.tombstoned) == (2, 0, 0, 0)
    account = Account.objects.get(provider="testnet", external_id="acct-1")
    assert account.owner_identity is not None
    assert account.owner_identity.display_name == "Owner Person"
    chat = Chat.objects.get(account=account, external_id="chat-1")
    assert chat.message_count == 2
    assert chat.last_message_at == T0 + timedelta(minutes=1)
    first = Message.objects.get(external_id="1")
    assert first.public_id.startswith("msg_") and len(first.public_id) == 30
    assert first.sender is not None and first.sender.phone == "+15550001"


def test_redelivery_changes_nothing() -> None:
    records = batch(message("1", "hello"), message("2", "there", minutes=1))
    batch_record(batch=records)
    before = list(Message.objects.order_by("id").values())
    again = batch_record(batch=records)
    assert (again.added, again.updated, again.unchanged) == (0, 0, 2)
    assert list(Message.objects.order_by("id").values()) == before
    assert MessageRevision.objects.count() == 0
    assert Chat.objects.get().message_count == 2


def test_same_id_twice_in_one_batch_is_one_message() -> None:
    result = batch_record(batch=batch(message("1", "first"), message("1", "first, fixed")))
    assert result.added == 1
    assert Message.objects.get().text == "first, fixed"


def test_edit_keeps_old_text_as_revision() -> None:
    batch_record(batch=batch(message("1", "original words")))
    edited_at = T0 + timedelta(hours=1)
    result = batch_record(batch=batch(message("1", "corrected words", edited_at=edited_at)))
    assert (result.added, result.updated) == (0, 1)
    msg = Message.objects.get()
    assert msg.text == "corrected words"
    assert msg.edited_at == edited_at
    assert list(msg.revisions.values_list("text", flat=True)) == ["original words"]
    # Re-delivering the older snapshot does not flip the text back.
    stale = batch_record(batch=batch(message("1", "original words")))
    assert stale.unchanged == 1
    assert Message.objects.get().text == "corrected words"


def test_deletion_is_a_tombstone_keeping_text() -> None:
    batch_record(batch=batch(message("1", "keep me")))
    gone = T0 + timedelta(days=1)
    result = batch_record(
        batch=batch(
            deletions=(DeletionRecord(chat_external_id="chat-1", external_id="1", deleted_at=gone),)
        )
    )
    assert result.tombstoned == 1
    msg = Message.objects.get()
    assert msg.deleted_at == gone
    assert msg.text == "keep me"
    assert Message.objects.visible().count() == 0


def test_reply_links_even_when_parent_arrives_later() -> None:
    batch_record(batch=batch(message("2", "answer", reply_to_external_id="1", minutes=1)))
    assert Message.objects.get(external_id="2").reply_to is None
    batch_record(batch=batch(message("1", "question")))
    reply = Message.objects.get(external_id="2")
    assert reply.reply_to == Message.objects.get(external_id="1")


def test_replies_link_within_a_batch_to_stored_parents_and_never_to_themselves() -> None:
    batch_record(batch=batch(message("1", "stored question")))
    batch_record(
        batch=batch(
            message("2", "answer to stored", reply_to_external_id="1", minutes=1),
            message("3", "new question", minutes=2),
            message("4", "answer to new", reply_to_external_id="3", minutes=3),
            message("5", "talks to itself", reply_to_external_id="5", minutes=4),
            message("6", "parent never seen", reply_to_external_id="99", minutes=5),
        )
    )
    parent = {m.external_id: m.reply_to and m.reply_to.external_id for m in Message.objects.all()}
    assert parent == {"1": None, "2": "1", "3": None, "4": "3", "5": None, "6": None}


def test_new_ids_stay_above_purged_ones() -> None:
    """AUTOINCREMENT never gives a purged message's id again; the sink, which hands out
    ids itself, must not either (a stale link or index entry would find the new row)."""
    batch_record(batch=batch(message("1", "first"), message("2", "second", minutes=1)))
    purged = Message.objects.get(external_id="2").pk
    message_purge(message_ids=[purged])
    batch_record(
        batch=batch(message("3", "third", minutes=2), message("4", "re", reply_to_external_id="3"))
    )
    third, fourth = Message.objects.get(external_id="3"), Message.objects.get(external_id="4")
    assert third.pk > purged and fourth.pk > purged
    assert fourth.reply_to == third
    assert fts_rowids("message_fts", '"third"') == {third.pk}
    for table in ("message_fts", "message_trigram"):
        fts_integrity(table)


def test_cursor_advances_with_the_batch() -> None:
    batch_record(batch=batch(message("1"), cursor={"offset": 10}))
    assert ConnectorState.objects.get().cursor == {"offset": 10}
    batch_record(batch=batch(message("2", minutes=1), cursor={"offset": 20}))
    assert ConnectorState.objects.get().cursor == {"offset": 20}


@pytest.mark.django_db(transaction=True)
def test_failure_mid_batch_leaves_nothing_and_keeps_cursor() -> None:
    batch_record(batch=batch(message("1"), cursor={"offset": 1}))
    snapshot = (Message.objects.count(), Chat.objects.count(), Identity.objects.count())
    # The attachment size overflows SQLite's 64-bit integer: the database refuses the row
    # after the batch's chat, identities and messages were already written.
    broken = batch(
        message("2", "new words", chat="chat-2"),
        message(
            "3", "more", chat="chat-2", attachments=(AttachmentRecord(file_name="x", size=2**70),)
        ),
        cursor={"offset": 3},
    )
    with pytest.raises(OverflowError):
        batch_record(batch=broken)
    assert (Message.objects.count(), Chat.objects.count(), Identity.objects.count()) == snapshot
    assert not Chat.objects.filter(external_id="chat-2").exists()
    assert ConnectorState.objects.get().cursor == {"offset": 1}
    assert fts_rowids("message_fts", '"words"') == set()


def test_invalid_records_are_refused_before_any_write() -> None:
    naive = MessageRecord(
        chat_external_id="chat-1", external_id="1", sent_at=T0.replace(tzinfo=None)
    )
    with pytest.raises(Invalid, match="timezone-aware"):
        batch_record(batch=batch(naive))
    with pytest.raises(Invalid, match="unknown direction"):
        batch_record(batch=batch(message("1", direction="sideways")))
    with pytest.raises(Invalid, match="at most"):
        batch_record(batch=batch(*(message(str(i)) for i in range(MAX_BATCH_MESSAGES + 1))))
    with pytest.raises(Invalid, match="neither in the batch nor known"):
        batch_record(batch=Batch(account=ACCOUNT, messages=(message("1", chat="nowhere"),)))
    assert Account.objects.count() == 0


def test_attachments_recorded_once() -> None:
    att = AttachmentRecord(
        external_id="a1", file_name="photo.jpg", mime_type="image/jpeg", size=10, sha256="ab" * 32
    )
    batch_record(batch=batch(message("1", "look", attachments=(att,))))
    batch_record(batch=batch(message("1", "look", attachments=(att,))))
    row = Attachment.objects.get()
    assert row.public_id.startswith("att_")
    assert row.file_name == "photo.jpg"


def test_fts_indexes_follow_insert_edit_tombstone_and_purge() -> None:
    batch_record(
        batch=batch(
            message("1", "Crème brûlée recipe at https://example.org/x"),
            message("2", "other", minutes=1),
        )
    )
    rowid = Message.objects.get(external_id="1").pk
    # words: case and diacritics folded
    assert fts_rowids("message_fts", '"creme" "brulee"') == {rowid}
    # trigram: substrings inside words and URLs
    assert fts_rowids("message_trigram", '"mple.or"') == {rowid}

    batch_record(batch=batch(message("1", "Tiramisu instead", edited_at=T0 + timedelta(hours=1))))
    assert fts_rowids("message_fts", '"creme"') == set()
    assert fts_rowids("message_fts", '"tiramisu"') == {rowid}
    assert fts_rowids("message_trigram", '"amis"') == {rowid}

    batch_record(batch=batch(deletions=(DeletionRecord("chat-1", "1", T0 + timedelta(days=1)),)))
    assert fts_rowids("message_fts", '"tiramisu"') == {
        rowid
    }  # tombstones stay findable (is:deleted)

    assert message_purge(message_ids=[rowid]) == 1
    assert fts_rowids("message_fts", '"tiramisu"') == set()
    assert fts_rowids("message_trigram", '"amis"') == set()
    assert Chat.objects.get().message_count == 1
    for table in ("message_fts", "message_trigram"):
        fts_integrity(table)


def test_message_rows_refuse_writes_outside_the_sink() -> None:
    batch_record(batch=batch(message("1")))
    msg = Message.objects.get()
    msg.text = "sneaky"
    with pytest.raises(WriteOutsideSink):
        msg.save()
    with pytest.raises(WriteOutsideSink):
        Message.objects.filter(pk=msg.pk).update(text="sneaky")
    with pytest.raises(WriteOutsideSink):
        Message.objects.filter(pk=msg.pk).delete()
    with pytest.raises(WriteOutsideSink):
        Message.objects.create(account=msg.account, chat=msg.chat, external_id="x", sent_at=T0)
    assert Message.objects.get().text == "hello"


def test_added_and_deleted_in_one_batch_is_a_tombstone() -> None:
    result = batch_record(
        batch=batch(
            message("1", "brief"),
            deletions=(DeletionRecord("chat-1", "1", T0 + timedelta(minutes=5)),),
        )
    )
    assert (result.added, result.tombstoned) == (1, 1)
    assert Message.objects.get().deleted_at == T0 + timedelta(minutes=5)


def test_text_is_normalised_and_raw_kept() -> None:
    decomposed = "Cafe\u0301 \x00ok"
    batch_record(batch=batch(message("1", decomposed, raw_json='{"text": "Cafe\\u0301"}')))
    msg = Message.objects.get()
    assert msg.text == "Caf\u00e9 ok"
    assert msg.raw_json == '{"text": "Cafe\\u0301"}'


def test_half_an_emoji_is_stored_as_a_replacement_character_not_refused() -> None:
    """Python strings can hold a lone UTF-16 surrogate (an export that cut an emoji in
    two); SQLite text cannot. The message is kept, with U+FFFD in its place."""
    broken = "cut \ud83d here \U0001f600 whole"
    batch_record(batch=batch(message("1", broken, raw_json='"\ud83d"')))
    msg = Message.objects.get()
    assert msg.text == "cut \ufffd here \U0001f600 whole"
    assert msg.raw_json == '"\ufffd"'


def test_a_lone_surrogate_in_any_text_field_is_replaced_and_the_rest_of_the_batch_kept() -> None:
    batch_record(
        batch=batch(
            message("ok", "plain"),
            message("x\udc00", "fine", reply_to_external_id="p\ud800", metadata={"n": "\udfff"}),
        )
    )
    broken = Message.objects.get(external_id="x\ufffd")
    assert broken.reply_to_external_id == "p\ufffd"
    assert broken.provider_metadata == {"n": "\ufffd"}
    assert Message.objects.get(external_id="ok").text == "plain"


def test_a_lone_surrogate_in_a_chat_title_or_a_name_is_replaced() -> None:
    records = batch(message("1", "hi"))
    records = replace(
        records,
        chats=(ChatRecord(external_id="chat-1", kind="group", title="cut \ud83d"),),
        identities=(IdentityRecord(external_id="alice", display_name="Al\udc00ice"),),
    )
    batch_record(batch=records)
    assert Chat.objects.get().title == "cut \ufffd"
    assert Message.objects.get().sender.display_name == "Al\ufffdice"


def fts_setting(table: str, name: str) -> int | None:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT v FROM {table}_config WHERE k = %s", [name])
        row = cursor.fetchone()
    return None if row is None else int(row[0])


def test_bulk_writes_defer_fts_merging_and_merge_the_backlog_afterwards() -> None:
    with fts_bulk_writes():
        assert [fts_setting(t, "automerge") for t in FTS_TABLES] == [0, 0]
        assert [fts_setting(t, "crisismerge") for t in FTS_TABLES] == [BULK_CRISISMERGE] * 2
        for number in range(12):  # one segment per table each
            batch_record(batch=batch(message(str(number), f"word{number} shared")))
        assert fts_merge_backlog() > 0  # 12 level-0 segments: there was work to do
        assert fts_merge_backlog() == 0
        batch_record(batch=batch(message("late", "after the merge shared")))
    assert [fts_setting(t, "automerge") for t in FTS_TABLES] == [FTS_AUTOMERGE] * 2
    assert [fts_setting(t, "crisismerge") for t in FTS_TABLES] == [FTS_CRISISMERGE] * 2
    assert fts_merge_backlog() == 0  # what the block left was merged on the way out
    for table in FTS_TABLES:
        fts_integrity(table)
        assert len(fts_rowids(table, "shared")) == 13


def test_the_nightly_optimise_puts_back_merging_a_killed_import_left_off() -> None:
    with connection.cursor() as cursor:
        for table in FTS_TABLES:  # what a process killed inside fts_bulk_writes leaves
            cursor.execute(f"INSERT INTO {table}({table}, rank) VALUES ('automerge', 0)")
    store_optimize()
    assert [fts_setting(t, "automerge") for t in FTS_TABLES] == [FTS_AUTOMERGE] * 2


def test_redelivery_cost_does_not_grow_with_the_batch(django_assert_max_num_queries: Any) -> None:
    records = batch(
        *[
            message(
                str(i),
                f"text {i}",
                minutes=i,
                attachments=(AttachmentRecord(external_id=f"a{i}", file_name=f"{i}.bin"),),
            )
            for i in range(300)
        ]
    )
    batch_record(batch=records)
    with django_assert_max_num_queries(20):
        result = batch_record(batch=records)
    assert result.unchanged == 300


@pytest.mark.django_db(transaction=True)
def test_the_sink_indexes_what_it_inserts_and_a_failed_batch_indexes_nothing() -> None:
    batch_record(batch=batch(*[message(str(i), f"bulk words {i}", minutes=i) for i in range(50)]))
    assert len(fts_rowids("message_fts", '"bulk"')) == 50
    assert len(fts_rowids("message_trigram", '"ulk wor"')) == 50
    broken = batch(message("x", "doomed words", attachments=(AttachmentRecord(size=2**70),)))
    with pytest.raises(OverflowError):
        batch_record(batch=broken)
    assert fts_rowids("message_fts", '"doomed"') == set()
    for table in ("message_fts", "message_trigram"):
        fts_integrity(table)


def test_fts_triggers_follow_edits_and_deletions_only() -> None:
    """Inserts are indexed by the sink (set-wise); a per-row insert trigger would be
    paid on every row of an import (migration 0008)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        names = {row[0] for row in cursor.fetchall()}
    for table in ("message_fts", "message_trigram"):
        assert {f"{table}_ad", f"{table}_au"} <= names
        assert f"{table}_ai" not in names


def test_finding_stored_messages_probes_the_index_once_per_id() -> None:
    """Not a walk over the chat per id: that grows with the archive (quadratic imports)."""
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + STORED_IDS_SQL, ['["1", "2"]', 1, 1])
        plan = [row[-1] for row in cursor.fetchall()]
    assert plan[0].startswith("SCAN wanted")
    assert "(account_id=? AND chat_id=? AND external_id=?)" in plan[1]
