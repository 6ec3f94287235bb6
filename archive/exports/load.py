"""`export_load`: a WireCat export read back into a store through the same writers as
everything else — messages (with their revisions and tombstones) through the sink's
`batch_record`, people, tags, notes, tasks and meetings through their own services.

The whole export is checked first (every line of every file, every attachment's bytes
present), so a broken line is refused before anything is written. Then each batch is its
own transaction, and every step is idempotent: importing the same export again changes
nothing, and an import stopped half-way is finished by running it again."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from django.db import transaction

from archive.connectors.base import file_opener
from archive.exports.reader import ExportFolder, Line
from archive.people.services import identities_link, person_create, person_rename
from archive.store.domain import (
    CHAT_KINDS,
    DIRECTIONS,
    MESSAGE_KINDS,
    AccountRecord,
    AttachmentRecord,
    Batch,
    ChatRecord,
    IdentityRecord,
    MessageRecord,
)
from archive.store.models import Attachment, Chat, Identity, Message, Person
from archive.store.sink import batch_record
from archive.store.staging import message_staged

BATCH = 1_000  # messages (or chats, identities) per transaction
# Called after each line written: (the file's kind, lines of it done so far).
Progress = Callable[[str, int], None]


@dataclass
class LoadDone:
    """What an import did: lines read per file, messages added, and what was passed over
    (reason -> count)."""

    lines: Counter[str] = field(default_factory=Counter)
    messages_added: int = 0
    messages_updated: int = 0
    skipped: Counter[str] = field(default_factory=Counter)


@dataclass
class Ids:
    """The export's ids of what a re-import numbers anew, and what they became."""

    accounts: dict[int, AccountRecord] = field(default_factory=dict)
    chats: dict[int, tuple[int, ChatRecord]] = field(default_factory=dict)
    people: dict[int, int] = field(default_factory=dict)  # export id -> person pk
    calendars: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (kind, key)
    chat_pks: dict[int, int | None] = field(default_factory=dict)

    def chat_pk(self, chat: int) -> int | None:
        """The stored chat that the export's chat `chat` became."""
        if chat not in self.chat_pks:
            known = self.chats.get(chat)
            found = None
            if known is not None:
                account = self.accounts[known[0]]
                found = (
                    Chat.objects.filter(
                        account__provider=account.provider,
                        account__external_id=account.external_id,
                        external_id=known[1].external_id,
                    )
                    .values_list("pk", flat=True)
                    .first()
                )
            self.chat_pks[chat] = found
        return self.chat_pks[chat]

    def message_pk(self, chat: int, external_id: str) -> int | None:
        chat_pk = self.chat_pk(chat)
        if chat_pk is None:
            return None
        found = Message.objects.filter(chat_id=chat_pk, external_id=external_id)
        return found.values_list("pk", flat=True).first()


# --- reading lines into records -------------------------------------------------------------


def _identity_record(line: Line) -> IdentityRecord:
    return IdentityRecord(
        external_id=line.text("external_id", required=True),
        display_name=line.text("display_name"),
        phone=line.text("phone"),
        email=line.text("email"),
        handle=line.text("handle"),
    )


def account_read(line: Line, ids: Ids) -> None:
    owner = line.child("owner")
    ids.accounts[line.integer("id")] = AccountRecord(
        provider=line.text("provider", required=True),
        external_id=line.text("external_id", required=True),
        name=line.text("name"),
        owner=None if owner is None else _identity_record(owner),
    )


def chat_read(line: Line, ids: Ids) -> None:
    account = line.integer("account")
    if account not in ids.accounts:
        raise line.fail(f"account: {account} is not in accounts.jsonl")
    kind = line.text("kind") or "dm"
    if kind not in CHAT_KINDS:
        raise line.fail(f"kind: one of {', '.join(CHAT_KINDS)}, not {kind[:20]!r}")
    record = ChatRecord(
        external_id=line.text("external_id", required=True),
        kind=kind,
        title=line.text("title"),
        metadata=line.mapping("metadata"),
    )
    ids.chats[line.integer("id")] = (account, record)


def _attachment_record(line: Line, export: ExportFolder) -> AttachmentRecord:
    name = line.optional_text("file")
    size = line.optional_integer("size")
    record = AttachmentRecord(
        external_id=line.text("external_id"),
        file_name=line.text("file_name"),
        mime_type=line.text("mime_type"),
        size=size,
        sha256=line.text("sha256"),
        metadata=line.mapping("metadata"),
        public_id=line.text("id") or None,  # kept when free (the sink checks it)
    )
    if name is None:  # the store had only its metadata
        return record
    return replace(record, content=file_opener(export.attachment(line, name)))


def message_versions(line: Line, ids: Ids, export: ExportFolder) -> tuple[int, list[MessageRecord]]:
    """(the export's account id, the message as the sink is handed it in turn): its first
    text, then each later one with the time the one before was replaced, the deletion
    with the last; the sink keeps each replaced text as a revision."""
    chat = line.integer("chat")
    if chat not in ids.chats:
        raise line.fail(f"chat: {chat} is not in chats.jsonl")
    account, chat_record = ids.chats[chat]
    kind, direction = line.text("kind") or "text", line.text("direction") or "in"
    if kind not in MESSAGE_KINDS:
        raise line.fail(f"kind: one of {', '.join(MESSAGE_KINDS)}, not {kind[:20]!r}")
    if direction not in DIRECTIONS:
        raise line.fail(f"direction: one of {', '.join(DIRECTIONS)}, not {direction[:20]!r}")
    revisions = line.objects("revisions")
    texts = [revision.text("text") for revision in revisions] + [line.text("text")]
    replaced = [revision.optional_time("edited_at") for revision in revisions]
    edited_at, deleted_at = line.optional_time("edited_at"), line.optional_time("deleted_at")
    first = MessageRecord(
        chat_external_id=chat_record.external_id,
        external_id=line.text("external_id", required=True),
        sent_at=line.time("sent_at"),
        text=texts[0],
        sender_external_id=line.optional_text("sender") or None,
        direction=direction,
        kind=kind,
        reply_to_external_id=line.text("reply_to_external_id"),
        edited_at=None if revisions else edited_at,
        deleted_at=None if revisions else deleted_at,
        raw_json=line.text("raw_json"),
        metadata=line.mapping("metadata"),
        attachments=tuple(_attachment_record(a, export) for a in line.objects("attachments")),
        date_estimated=line.flag("date_estimated"),
        public_id=line.text("id") or None,  # kept when free, so references still find it
    )
    versions = [first]
    for number, text in enumerate(texts[1:], start=1):
        versions.append(
            replace(
                first,
                text=text,
                edited_at=replaced[number - 1],
                deleted_at=deleted_at if number == len(revisions) else None,
                attachments=(),
            )
        )
    if revisions and edited_at is not None and edited_at != replaced[-1]:
        versions.append(replace(versions[-1], edited_at=edited_at))
    return account, versions


def people_line(line: Line) -> tuple[int, str, bool, list[tuple[str, str]]]:
    keys = []
    for key in line.values("identities"):
        if not (isinstance(key, list) and len(key) == 2 and all(isinstance(k, str) for k in key)):
            raise line.fail("identities: each a [provider, external_id] pair")
        keys.append((key[0], key[1]))
    return line.integer("id"), line.text("name", required=True), line.flag("is_owner"), keys


# --- writing ------------------------------------------------------------------------------


def chats_write(ids: Ids) -> None:
    """Every account and its chats (an empty chat too), a batch per BATCH chats."""
    by_account: dict[int, list[ChatRecord]] = defaultdict(list)
    for owner_id, record in ids.chats.values():
        by_account[owner_id].append(record)
    for account_id, account in ids.accounts.items():
        found = by_account.get(account_id) or []
        batch_record(batch=Batch(account=account), quiet=True)
        for start in range(0, len(found), BATCH):
            chats = tuple(found[start : start + BATCH])
            batch_record(batch=Batch(account=account, chats=chats), quiet=True)


def identities_write(export: ExportFolder, ids: Ids, done: LoadDone, progress: Progress) -> None:
    """Identities with their names, numbers and addresses, each through an account of its
    provider; one of a provider no account has (a meeting's e-mail participant) is made
    again by what names it."""
    account_of: dict[str, AccountRecord] = {}
    for account in ids.accounts.values():
        account_of.setdefault(account.provider, account)
    pending: dict[str, list[IdentityRecord]] = defaultdict(list)
    for line in export.lines("identities"):
        provider = line.text("provider", required=True)
        done.lines["identities"] += 1
        progress("identities", done.lines["identities"])
        if provider not in account_of:
            done.skipped["identities of a provider no account has"] += 1
            continue
        pending[provider].append(_identity_record(line))
        if len(pending[provider]) >= BATCH:
            batch = Batch(account=account_of[provider], identities=tuple(pending.pop(provider)))
            batch_record(batch=batch, quiet=True)
    for provider, records in pending.items():
        batch = Batch(account=account_of[provider], identities=tuple(records))
        batch_record(batch=batch, quiet=True)


def messages_write(export: ExportFolder, ids: Ids, done: LoadDone, progress: Progress) -> None:
    """Messages, a batch per account and BATCH messages: first texts, then each round of
    edits of the same messages in a batch of its own (a batch names a message once)."""
    pending: dict[int, list[list[MessageRecord]]] = defaultdict(list)
    for line in export.lines("messages"):
        account, versions = message_versions(line, ids, export)
        pending[account].append(versions)
        done.lines["messages"] += 1
        if len(pending[account]) >= BATCH:
            _messages_flush(ids.accounts[account], pending.pop(account), done)
            progress("messages", done.lines["messages"])
    for account, waiting in pending.items():
        _messages_flush(ids.accounts[account], waiting, done)
    progress("messages", done.lines["messages"])


def _messages_flush(
    account: AccountRecord, waiting: list[list[MessageRecord]], done: LoadDone
) -> None:
    rounds = max(len(versions) for versions in waiting)
    for number in range(rounds):
        records = [versions[number] for versions in waiting if len(versions) > number]
        staged = []
        for record in records:
            message, unreadable = message_staged(record)
            done.skipped["attachment bytes unreadable"] += unreadable
            staged.append(message)
        result = batch_record(batch=Batch(account=account, messages=tuple(staged)), quiet=True)
        done.messages_added += result.added
        done.messages_updated += result.updated


def people_write(export: ExportFolder, ids: Ids, done: LoadDone, progress: Progress) -> None:
    """Each person with the identities linked to them (the owner's person is the one the
    sink made for the owner's own identities). A person already holding all of them, or
    of the same name with none, is the same person: kept, not made again."""
    for line in export.lines("people"):
        number, name, is_owner, keys = people_line(line)
        with transaction.atomic():
            ids.people[number] = _person(name, is_owner, keys, done)
        done.lines["people"] += 1
        progress("people", done.lines["people"])


def _person(name: str, is_owner: bool, keys: list[tuple[str, str]], done: LoadDone) -> int:
    identity_ids = _identity_ids(keys)
    if len(identity_ids) < len(keys):
        done.skipped["people's identities not in the store"] += len(keys) - len(identity_ids)
    owner = Person.objects.filter(is_owner=True).first() if is_owner else None
    if owner is not None:
        if owner.name != name:
            person_rename(person_id=owner.pk, name=name)
        if identity_ids:
            identities_link(identity_ids=identity_ids, person_id=owner.pk, actor="system")
        return owner.pk
    holders = set(Identity.objects.filter(pk__in=identity_ids).values_list("person_id", flat=True))
    if identity_ids and len(holders) == 1 and None not in holders:
        return int(holders.pop())
    if not identity_ids:
        same = Person.objects.filter(name=name, identities__isnull=True, is_owner=False).first()
        if same is not None:
            return same.pk
    return person_create(name=name, identity_ids=identity_ids, actor="system").pk


def _identity_ids(keys: list[tuple[str, str]]) -> list[int]:
    found = []
    for provider, external_id in keys:
        pk = (
            Identity.objects.filter(provider=provider, external_id=external_id)
            .values_list("pk", flat=True)
            .first()
        )
        if pk is not None:
            found.append(pk)
    return found


def attachment_pk(ids: Ids, chat: int, message_external_id: str, external_id: str) -> int | None:
    message = ids.message_pk(chat, message_external_id)
    if message is None:
        return None
    found = Attachment.objects.filter(message_id=message, external_id=external_id)
    return found.values_list("pk", flat=True).first()
