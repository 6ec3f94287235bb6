"""How the rows of a Messages database become records.

Apple times (seconds or nanoseconds since 2001) become datetimes; handles become identities
(an address, a phone number or a handle); service items (members added or removed, a new
name, a FaceTime call, …) become a sentence; tapbacks (reactions, `associated_message_type`
2000-3999) are not messages but are folded into their target's `metadata["reactions"]`;
attachments are found in the export's `Attachments` folder, never outside it.

Nothing missing costs a message (archive/connectors/estimates.py): a message without a chat
link goes to its handle's conversation (the direct chat with that handle alone, else one
made for the handle, as for databases without `chat`/`chat_message_join`), else to one
"Messages without a conversation" chat; without a `date`, it takes the time of the message
before it (by ROWID), else after it, else the database file's time, marked estimated;
without a `guid`, its id is a content hash; without a handle, it has no sender.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any

from archive.connectors.base import ImportItem, file_opener, safe_member
from archive.connectors.estimates import FROM_FILE_TIME, ContentIds, estimate_note
from archive.connectors.imessage.attributed_body import attributed_text
from archive.store.domain import AttachmentRecord, ChatRecord, IdentityRecord, MessageRecord

OWNER = IdentityRecord(external_id="me", display_name="Me")

# Where Messages keeps attachments (macOS, iOS); a stored path maps onto the export's
# Attachments folder after the first of these found in it.
_ATTACHMENT_MARKERS = (
    "/Library/Messages/Attachments/",
    "/Library/SMS/Attachments/",
    "/Attachments/",
)
_APPLE_EPOCH = datetime(2001, 1, 1, tzinfo=UTC)
_NANOSECOND_DATES = 100_000_000_000  # above this a date counts nanoseconds, not seconds
TAPBACK_NAMES = {
    0: "love",
    1: "like",
    2: "dislike",
    3: "laugh",
    4: "emphasize",
    5: "question",
    6: "emoji",
    7: "sticker",
}
_TARGET_PREFIX = re.compile(r"^(?:p:\d+/|bp:)")
_PHONE = re.compile(r"^\+?[\d\s().\-]{3,}$")
_OBJECT_REPLACEMENT = "\ufffc"  # stands in the text where an attachment sits

# The chat of messages that name neither a chat nor a handle.
UNLINKED_CHAT = ChatRecord(
    external_id="unlinked",
    kind="group",
    title="Messages without a conversation",
    metadata={"synthesized": True},
)

# Skip reasons, counted in ExportStream.skipped.
SKIP_TAPBACK = "tapback (kept as reaction)"
SKIP_TAPBACK_UNDONE = "tapback removed or replaced later"
SKIP_TAPBACK_ORPHAN = "tapback on a message not in the export"
SKIP_BODY = "attributedBody unreadable (text left empty)"
SKIP_MISSING_ATTACHMENT_ROW = "attachment link to an attachment row that no longer exists"
SKIP_ATTACHMENT_ABSENT = "attachment file not in the export (kept as metadata)"
SKIP_ATTACHMENT_REFUSED = "attachment path outside the Attachments folder (refused)"


# -- values --------------------------------------------------------------------------------


def apple_time(value: Any) -> datetime | None:
    """A chat.db date (seconds or, in newer databases, nanoseconds since 2001-01-01 UTC)."""
    if value is None or isinstance(value, bytes | str):
        return None
    try:
        if isinstance(value, int):
            if value == 0:
                return None
            if abs(value) > _NANOSECOND_DATES:
                return _APPLE_EPOCH + timedelta(microseconds=value // 1000)
            return _APPLE_EPOCH + timedelta(seconds=value)
        number = float(value)
        if number == 0 or number != number:
            return None
        if abs(number) > _NANOSECOND_DATES:
            number /= 1e9
        return _APPLE_EPOCH + timedelta(seconds=number)
    except (OverflowError, ValueError):
        return None


def iso_time(value: Any) -> str | None:
    moment = apple_time(value)
    return moment.isoformat() if moment else None


def handle_identity(handle_id: str) -> IdentityRecord:
    if "@" in handle_id:
        return IdentityRecord(external_id=handle_id, email=handle_id)
    if _PHONE.match(handle_id) and any(ch.isdigit() for ch in handle_id):
        return IdentityRecord(external_id=handle_id, phone=handle_id)
    return IdentityRecord(external_id=handle_id, handle=handle_id)


def tapback_target(guid: str) -> str:
    return _TARGET_PREFIX.sub("", guid)


def _service_text(row: dict[str, Any], handles: dict[int, IdentityRecord]) -> str:
    item_type = row.get("item_type") or 0
    action = row.get("group_action_type") or 0
    other = handles.get(row.get("other_handle") or 0)
    who = other.external_id if other else "someone"
    if item_type == 1:
        return f"removed {who}" if action == 1 else f"added {who}"
    if item_type == 2:
        title = row.get("group_title")
        return f"named the conversation “{title}”" if title else "removed the conversation name"
    if item_type == 3:
        return {
            0: "left the conversation",
            1: "changed the group photo",
            2: "removed the group photo",
        }.get(action, "changed the conversation")
    if item_type == 4:
        return "shared a location"
    if item_type == 5:
        return "kept an audio message"
    if item_type == 6:
        return "FaceTime call"
    return ""


# -- messages --------------------------------------------------------------------------------


@dataclass
class Translation:
    """Message rows into ImportItems: what that needs from the small tables read first (the
    handles, the chats, the tapbacks), and the skips it counts."""

    handles: dict[int, IdentityRecord]
    chats: dict[int, ChatRecord]
    reactions: dict[str, list[dict[str, Any]]]  # target guid → its reactions
    tapback_rows: Counter[str]  # target guid → its tapback rows
    attachments_root: Path | None
    chats_joined: bool  # the database links messages to chats (chat_message_join)
    skipped: Counter[str]
    # The database file's time: an undated message's provisional time (estimates.py).
    database_time: datetime = _APPLE_EPOCH
    emitted_targets: set[str] = field(default_factory=set)
    content_ids: ContentIds = field(default_factory=ContentIds)
    _direct: dict[str, ChatRecord] | None = None  # handle -> its one-to-one chat

    def count_tapbacks(self) -> None:
        for target, rows in self.tapback_rows.items():
            if target not in self.emitted_targets:
                self.skipped[SKIP_TAPBACK_ORPHAN] += rows
                continue
            kept = len(self.reactions.get(target, ()))
            self.skipped[SKIP_TAPBACK] += kept
            if rows > kept:
                self.skipped[SKIP_TAPBACK_UNDONE] += rows - kept

    def _direct_chat(self, handle: str) -> ChatRecord | None:
        """The chat whose only participant is `handle`, if the database has one."""
        if self._direct is None:
            self._direct = {}
            for chat in self.chats.values():
                participants = chat.metadata.get("participants") or []
                if chat.kind == "dm" and len(participants) == 1:
                    self._direct.setdefault(participants[0], chat)
        return self._direct.get(handle)

    def _chat_for(self, row: dict[str, Any], chat_ids: list[Any]) -> tuple[ChatRecord, list[str]]:
        known = [self.chats[c] for c in chat_ids if isinstance(c, int) and c in self.chats]
        if known:
            return known[0], [c.external_id for c in known[1:]]
        # No chat link (a database without the join table, or a message it does not
        # join): the conversation with its handle (a message from me names the other side).
        identity = self.handles.get(row.get("handle_id") or 0)
        if identity is None:
            return UNLINKED_CHAT, []
        direct = self._direct_chat(identity.external_id)
        if direct is not None:
            return direct, []
        return ChatRecord(
            external_id=f"handle:{identity.external_id}",
            kind="dm",
            title=identity.external_id,
            metadata={"synthesized": True},
        ), []

    def item(
        self, row: dict[str, Any], chat_ids: list[Any], attachment_rows: list[dict[str, Any]]
    ) -> ImportItem | None:
        rowid = int(row["rowid"])
        chat, other_chats = self._chat_for(row, chat_ids)
        guid = str(row.get("guid") or "")
        metadata: dict[str, Any] = {"rowid": rowid}
        if other_chats:
            metadata["also_in_chats"] = other_chats

        text = row.get("text")
        if not text and row.get("attributedbody"):
            blob = row["attributedbody"]
            decoded = attributed_text(bytes(blob)) if isinstance(blob, bytes) else None
            if decoded is None:
                self.skipped[SKIP_BODY] += 1
                metadata["text_unreadable"] = True
            text = decoded
        text = str(text or "")
        if _OBJECT_REPLACEMENT in text:
            text = text.replace(_OBJECT_REPLACEMENT, "")
            if not text.strip():
                text = ""

        kind = "text"
        if row.get("item_type") or row.get("is_system_message"):
            kind = "service"
            metadata["item_type"] = row.get("item_type") or 0
            if row.get("group_action_type"):
                metadata["group_action_type"] = row["group_action_type"]
            if not text:
                text = _service_text(row, self.handles)
        if not text and not row.get("text") and not row.get("attributedbody"):
            metadata["no_text"] = True  # neither text nor attributedBody (e.g. unsent)

        from_me = bool(row.get("is_from_me"))
        identities: tuple[IdentityRecord, ...] = ()
        sender: str | None = None
        if from_me:
            sender = OWNER.external_id
        else:
            identity = self.handles.get(row.get("handle_id") or 0)
            if identity is None and chat.kind == "dm":
                participants = chat.metadata.get("participants") or []
                if len(participants) == 1:
                    identity = handle_identity(participants[0])
            if identity is not None:
                sender, identities = identity.external_id, (identity,)

        sent_at = apple_time(row.get("date"))
        estimated = sent_at is None
        if sent_at is None:
            sent_at = self.database_time  # provisional: a neighbour's time replaces it
            estimate_note(metadata, FROM_FILE_TIME)
        if not guid:
            guid = self.content_ids(chat.external_id, sender, None if estimated else sent_at, text)
            metadata["id_missing"] = True

        for key in ("service", "subject", "thread_originator_part", "expressive_send_style_id"):
            if row.get(key):
                metadata[key] = row[key]
        if row.get("balloon_bundle_id"):
            metadata["app"] = row["balloon_bundle_id"]
        own_address = row.get("destination_caller_id") or row.get("account")
        if own_address:
            metadata["own_address"] = own_address
        if row.get("is_audio_message"):
            metadata["audio_message"] = True
        for key, column in (("read_at", "date_read"), ("delivered_at", "date_delivered")):
            when = iso_time(row.get(column))
            if when:
                metadata[key] = when
        if row.get("associated_message_guid") and row.get("associated_message_type"):
            metadata["associated_message_guid"] = tapback_target(
                str(row["associated_message_guid"])
            )
            metadata["associated_message_type"] = row["associated_message_type"]
        if guid in self.tapback_rows:
            self.emitted_targets.add(guid)
            reactions = self.reactions.get(guid)
            if reactions:
                metadata["reactions"] = reactions

        return ImportItem(
            chat=chat,
            message=MessageRecord(
                chat_external_id=chat.external_id,
                external_id=guid,
                sent_at=sent_at,
                text=text,
                sender_external_id=sender,
                direction="out" if from_me else "in",
                kind=kind,
                reply_to_external_id=str(row.get("thread_originator_guid") or ""),
                edited_at=apple_time(row.get("date_edited")),
                deleted_at=apple_time(row.get("date_retracted")),
                metadata=metadata,
                attachments=tuple(self._attachment(a) for a in attachment_rows if self._keep(a)),
                date_estimated=estimated,
            ),
            identities=identities,
        )

    def _keep(self, row: dict[str, Any]) -> bool:
        if row.get("present"):
            return True
        self.skipped[SKIP_MISSING_ATTACHMENT_ROW] += 1
        return False

    def _attachment(self, row: dict[str, Any]) -> AttachmentRecord:
        filename = str(row.get("filename") or "")
        transfer_name = str(row.get("transfer_name") or "")
        metadata: dict[str, Any] = {"rowid": row["attachment_id"]}
        for key in ("filename", "transfer_name", "uti"):
            if row.get(key):
                metadata[key] = row[key]
        if row.get("is_sticker"):
            metadata["sticker"] = True
        content = None
        located, refused = self._locate(filename)
        if located is not None:
            content = file_opener(located)
        else:
            metadata["not_included"] = True
            if refused:
                metadata["refused_path"] = True
                self.skipped[SKIP_ATTACHMENT_REFUSED] += 1
            else:
                self.skipped[SKIP_ATTACHMENT_ABSENT] += 1
        size = row.get("total_bytes")
        return AttachmentRecord(
            external_id=str(row.get("guid") or f"attachment-{row['attachment_id']}"),
            file_name=transfer_name or PurePosixPath(filename.replace("\\", "/")).name,
            mime_type=str(row.get("mime_type") or ""),
            size=size if isinstance(size, int) and size > 0 else None,
            metadata=metadata,
            content=content,
        )

    def _locate(self, filename: str) -> tuple[Path | None, bool]:
        """The file in the export's Attachments folder, and whether its path was refused."""
        cleaned = "/" + filename.replace("\\", "/").lstrip("/")
        marker = next((m for m in _ATTACHMENT_MARKERS if m in cleaned), None)
        if marker is None:
            return None, False
        relative = cleaned.split(marker, 1)[1]
        parts = PurePosixPath(relative).parts
        if not relative or relative.startswith("/") or ".." in parts:
            return None, True
        if self.attachments_root is None:
            return None, False
        return safe_member(self.attachments_root, relative), False
