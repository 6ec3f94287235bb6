"""How one message of a Telegram Desktop export becomes records.

Times: `*_unixtime` is UTC and wins; a local `date` without a zone is read as UTC and
flagged, and an `edited` local time is corrected by the offset `date` and `date_unixtime`
give. A message with neither readable is kept, its time estimated (the message before it
in its chat, the one after it, else the file's time: estimates.py); an unreadable `edited`
is left out. A message without an `id` gets a content hash (estimates.ContentIds).
Text: `text_entities` (else `text`) flattened, the entities kept when they carry
formatting. Service messages become a readable sentence, their details kept in metadata.
Media: paths relative to the export folder, never outside it; media Telegram left out of
the export are kept as metadata.
"""

from __future__ import annotations

import json
import mimetypes
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from archive.connectors.base import ImportItem, file_opener, safe_member
from archive.connectors.estimates import FROM_FILE_TIME, ContentIds, estimate_note, file_time
from archive.store.domain import AttachmentRecord, ChatRecord, IdentityRecord, MessageRecord

MAX_SENDER_RECORDS = 50_000  # senders whose record is reused, a bounded cache

# Message fields that become MessageRecord fields; everything else travels in metadata.
CONSUMED = frozenset(
    {
        "id",
        "type",
        "date",
        "date_unixtime",
        "edited",
        "edited_unixtime",
        "from",
        "from_id",
        "actor",
        "actor_id",
        "action",
        "text",
        "text_entities",
        "reply_to_message_id",
        "photo",
        "file",
        "thumbnail",
        "contact_vcard",
    }
)
# Message fields that describe its media, copied onto the attachment's metadata as well.
MEDIA_FIELDS = (
    "media_type",
    "width",
    "height",
    "duration_seconds",
    "performer",
    "title",
    "sticker_emoji",
    "thumbnail",
    "media_spoiler",
)
CALL_ENDINGS = {"missed": "missed", "busy": "busy", "disconnect": "disconnected", "hangup": ""}


# --- small conversions ------------------------------------------------------------------


def id_text(value: Any) -> str | None:
    """A JSON id (number or string) as text, or None when there is none."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _peer(value: Any) -> str | None:
    """`from_id`/`actor_id` as "user123"/"channel123"; a bare number (2020) is a user."""
    text = id_text(value)
    if text is None:
        return None
    if text.lstrip("-").isdigit():
        return f"user{text}"
    return text


def _digits(value: Any) -> str:
    text = id_text(value) or ""
    return text.lstrip("abcdefghijklmnopqrstuvwxyz_")


class BadValue(ValueError):
    """A message field whose value cannot be read (the reader names the message)."""


def _time(message: dict[str, Any], unix_key: str, local_key: str) -> tuple[datetime | None, bool]:
    """(time, zone unknown). `*_unixtime` is UTC and wins; the other is local time without
    a zone, which is read as UTC and flagged. (None, False) when neither can be read."""
    unix = message.get(unix_key)
    if unix is not None and unix != "":
        try:
            seconds = unix if isinstance(unix, int) else int(float(str(unix).strip()))
            return datetime.fromtimestamp(seconds, tz=UTC), False
        except (TypeError, ValueError, OverflowError, OSError):
            pass  # unreadable: the local time may still say
    try:
        return _local_time(message.get(local_key), local_key)
    except BadValue:
        return None, False


def _local_time(local: Any, local_key: str) -> tuple[datetime | None, bool]:
    """A local time without zone, read as UTC; (time, zone unknown)."""
    if local is None or local == "":
        return None, False
    if not isinstance(local, str):
        raise BadValue(f"{local_key} {local!r} is not a date")
    try:
        parsed = datetime.fromisoformat(local.strip())
    except ValueError as exc:
        raise BadValue(f"{local_key} {local!r} is not a date") from exc
    if parsed.tzinfo is not None:
        return parsed, False
    return parsed.replace(tzinfo=UTC), True


def _local_offset(message: dict[str, Any], utc: datetime) -> timedelta | None:
    """The exporter's UTC offset, from a message's local `date` and its UTC time."""
    try:
        local, naive = _local_time(message.get("date"), "date")
    except BadValue:
        return None
    if local is None or not naive:
        return None
    quarters = round((local - utc).total_seconds() / 900)
    if abs(quarters) > 18 * 4:
        return None
    return timedelta(minutes=15 * quarters)


def _fragments(value: Any) -> list[dict[str, Any]]:
    """`text` or `text_entities` as a list of entities ({"type", "text", …})."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [{"type": "plain", "text": value}]
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return [{"type": "plain", "text": str(value)}]
    out: list[dict[str, Any]] = []
    for part in value:
        if isinstance(part, str):
            out.append({"type": "plain", "text": part})
        elif isinstance(part, dict):
            entity = dict(part)
            entity["type"] = str(entity.get("type") or "plain")
            entity["text"] = "" if entity.get("text") is None else str(entity["text"])
            out.append(entity)
        elif part is not None:
            out.append({"type": "plain", "text": str(part)})
    return out


def _flat(entities: list[dict[str, Any]]) -> str:
    return "".join(entity["text"] for entity in entities)


def _shape(entities: list[dict[str, Any]]) -> tuple[str, list[tuple[str, str]]]:
    """What two entity lists must share to say the same thing."""
    marked = [(e["type"], e["text"]) for e in entities if e["type"] != "plain" and e["text"]]
    return _flat(entities), marked


def _names(value: Any) -> str:
    if not isinstance(value, list):
        return _name(value)
    names = [_name(member) for member in value]
    if not names:
        return "nobody"
    if len(names) == 1:
        return names[0]
    return f"{', '.join(names[:-1])} and {names[-1]}"


def _name(value: Any) -> str:
    return str(value).strip() if value not in (None, "") else "a deleted account"


def _duration(seconds: Any) -> str:
    try:
        total = int(seconds)
    except (TypeError, ValueError):
        return ""
    if total < 60:
        return f"{total} s"
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{minutes} min {secs} s" if secs else f"{minutes} min"


def _quoted(value: Any) -> str:
    return f"“{value}”" if value not in (None, "") else ""


def _service_text(action: str, actor: str, details: dict[str, Any]) -> str:
    """A readable sentence for a service message."""
    title = _quoted(details.get("title"))
    if action == "phone_call":
        parts = [_duration(details["duration_seconds"])] if "duration_seconds" in details else []
        reason = details.get("discard_reason")
        if reason:
            parts.append(CALL_ENDINGS.get(str(reason), str(reason)))
        parts = [part for part in parts if part]
        return f"Call ({', '.join(parts)})" if parts else "Call"
    if action == "group_call":
        length = _duration(details.get("duration_seconds"))
        return f"{actor} started a voice chat" + (f" ({length})" if length else "")
    if action == "create_group":
        members = details.get("members")
        with_members = f" with {_names(members)}" if members else ""
        return f"{actor} created the group {title}".rstrip() + with_members
    if action == "create_channel":
        return f"{actor} created the channel {title}".rstrip()
    if action == "migrate_to_supergroup":
        return f"{actor} converted this group to a supergroup"
    if action == "migrate_from_group":
        return f"{actor} created this supergroup from the group {title}".rstrip()
    if action == "edit_group_title":
        return f"{actor} changed the group name to {title}".rstrip()
    if action == "edit_group_photo":
        return f"{actor} changed the group photo"
    if action == "delete_group_photo":
        return f"{actor} removed the group photo"
    if action == "invite_members":
        return f"{actor} added {_names(details.get('members'))}"
    if action == "remove_members":
        return f"{actor} removed {_names(details.get('members'))}"
    if action == "join_group_by_link":
        inviter = details.get("inviter")
        by = f" from {_name(inviter)}" if inviter else ""
        return f"{actor} joined the group via an invite link{by}"
    if action == "join_group_by_request":
        return f"{actor} was accepted into the group"
    if action == "pin_message":
        return f"{actor} pinned a message"
    if action in ("joined_telegram", "contact_signup"):
        return f"{actor} joined Telegram"
    if action == "clear_history":
        return "History was cleared"
    if action == "take_screenshot":
        return f"{actor} took a screenshot"
    if action == "score_in_game":
        return f"{actor} scored {details.get('score')} in a game"
    if action == "send_payment":
        amount = f" {details.get('amount')} {details.get('currency', '')}".rstrip()
        return f"{actor} paid{amount}"
    if action == "invite_to_group_call":
        return f"{actor} invited {_names(details.get('members'))} to the voice chat"
    if action == "group_call_scheduled":
        return f"{actor} scheduled a voice chat for {details.get('schedule_date', 'later')}"
    if action == "set_messages_ttl":
        period = _duration(details.get("period_seconds", details.get("period")))
        if not period or period == "0 s":
            return f"{actor} turned off auto-delete"
        return f"{actor} set messages to auto-delete after {period}"
    if action == "edit_chat_theme":
        return f"{actor} changed the chat theme to {details.get('emoticon', '')}".rstrip()
    if action == "topic_created":
        return f"{actor} created the topic {title}".rstrip()
    if action == "topic_edit":
        return f"{actor} edited the topic {_quoted(details.get('new_title'))}".rstrip()
    words = action.replace("_", " ").strip() or "service message"
    return f"{actor}: {words}"


def _not_included(value: str) -> bool:
    """Telegram writes "(File not included. …)", "(File exceeds maximum size. …)" and the
    like instead of a path."""
    stripped = value.strip()
    return stripped.startswith("(") and stripped.endswith(")")


def _unsafe(value: str) -> bool:
    cleaned = value.replace("\\", "/").strip()
    return (
        cleaned.startswith("/")
        or (len(cleaned) > 1 and cleaned[1] == ":")
        or ".." in PurePosixPath(cleaned).parts
    )


# --- the message ------------------------------------------------------------------------


@dataclass
class Context:
    """What translating a message needs from the reader: where the export is, the owner,
    the contacts' phone numbers, the skips to count, and the senders seen."""

    json_path: Path
    root: Path
    owner_id: str | None
    phones: dict[str, str]
    skipped: Counter[str]
    # One record per sender as last seen: a chunk sent from the reader's process then
    # pickles each sender once, not once per message.
    senders: dict[tuple[str, str], tuple[IdentityRecord, ...]] = field(default_factory=dict)
    # Ids for messages without one, and the provisional time of those without a date.
    content_ids: ContentIds = field(default_factory=ContentIds)
    _file_time: datetime | None = None

    def file_time(self) -> datetime:
        if self._file_time is None:
            self._file_time = file_time(self.json_path)
        return self._file_time


def message_item(context: Context, chat: ChatRecord, raw: dict[str, Any]) -> ImportItem:
    """The message `raw` (a JSON object) of `chat`. Raises BadValue for an unreadable field."""
    sent_at, zone_unknown = _time(raw, "date_unixtime", "date")
    estimated = sent_at is None
    if sent_at is None:
        sent_at = context.file_time()  # provisional: a neighbour's time replaces it
    edited_at, edited_naive = _time(raw, "edited_unixtime", "edited")
    edited_zone_unknown = False
    if edited_at is not None and edited_naive and not zone_unknown:
        # `edited` is local time but `date_unixtime` told the truth: `date` minus it is
        # the exporting computer's UTC offset, which `edited` shares.
        offset = _local_offset(raw, sent_at)
        if offset is None:
            edited_zone_unknown = True
        else:
            edited_at -= offset

    telegram_type = str(raw.get("type") or "message")
    service = telegram_type == "service"
    if service:
        sender_id = _peer(raw.get("actor_id", raw.get("from_id")))
        sender_name = raw.get("actor", raw.get("from"))
    else:
        sender_id = _peer(raw.get("from_id"))
        sender_name = raw.get("from")
    display = sender_name.strip() if isinstance(sender_name, str) else ""

    text, entity_meta = _text(raw)
    rest = {key: value for key, value in raw.items() if key not in CONSUMED}
    metadata: dict[str, Any] = {}
    if service:
        action = str(raw.get("action") or "")
        metadata["action"] = action
        metadata["action_details"] = rest
        sentence = _service_text(action, display or "Someone", rest)
        text = f"{sentence}: {text}" if text and text not in sentence else sentence
    else:
        metadata.update(rest)
        if telegram_type != "message":
            metadata["telegram_type"] = telegram_type
    metadata.update(entity_meta)
    if display:
        metadata["sender_name"] = display
    if zone_unknown:
        metadata["time_zone_unknown"] = True
    elif edited_zone_unknown:
        metadata["edited_time_zone_unknown"] = True
    if estimated:
        estimate_note(metadata, FROM_FILE_TIME)
    external_id = id_text(raw.get("id"))
    if external_id is None:
        when = str(raw.get("date_unixtime") or raw.get("date") or "") if estimated else sent_at
        external_id = context.content_ids(chat.external_id, sender_id, when, text)
        metadata["id_missing"] = True

    reply_to = id_text(raw.get("reply_to_message_id")) or ""
    peer = raw.get("reply_to_peer_id")
    if reply_to and peer is not None and _digits(peer) != _digits(chat.external_id):
        metadata["reply_to_message_id"] = raw.get("reply_to_message_id")  # another chat
        reply_to = ""

    identities: tuple[IdentityRecord, ...] = ()
    if sender_id:
        identities = context.senders.get((sender_id, display), ())
        if not identities:
            if len(context.senders) >= MAX_SENDER_RECORDS:
                context.senders.clear()
            identities = context.senders[(sender_id, display)] = (
                IdentityRecord(
                    external_id=sender_id,
                    display_name=display,
                    phone=context.phones.get(sender_id, ""),
                ),
            )
    message = MessageRecord(
        chat_external_id=chat.external_id,
        external_id=external_id,
        sent_at=sent_at,
        text=text,
        sender_external_id=sender_id,
        direction="out" if sender_id and sender_id == context.owner_id else "in",
        kind="service" if service else "text",
        reply_to_external_id=reply_to,
        edited_at=edited_at,
        raw_json=source_json(raw),
        metadata=metadata,
        attachments=_attachments(context, raw),
        date_estimated=estimated,
    )
    return ImportItem(chat=chat, message=message, identities=identities)


def source_json(raw: dict[str, Any]) -> str:
    """A message's source JSON as kept: compact, written at C speed (orjson); by json's own
    encoder what orjson refuses (a lone surrogate a streamed file can hold, an integer past
    64 bits)."""
    try:
        return orjson.dumps(raw).decode()
    except (orjson.JSONEncodeError, UnicodeDecodeError):
        return json.dumps(raw, ensure_ascii=False, separators=(",", ":"))


def _text(raw: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Plain text, and the metadata that keeps its formatting."""
    from_text = _fragments(raw.get("text"))
    has_entities = isinstance(raw.get("text_entities"), list)
    entities = _fragments(raw["text_entities"]) if has_entities else from_text
    text = _flat(entities) or _flat(from_text)
    metadata: dict[str, Any] = {}
    if any(entity["type"] != "plain" for entity in entities):
        metadata["entities"] = entities
    if has_entities and _shape(entities) != _shape(from_text):
        metadata["text_raw"] = raw.get("text")
    return text, metadata


def _attachments(context: Context, raw: dict[str, Any]) -> tuple[AttachmentRecord, ...]:
    found: list[AttachmentRecord] = []
    for key in ("photo", "file", "contact_vcard"):
        value = raw.get(key)
        if value is None or value == "":
            continue
        found.append(_attachment(context, raw, key, str(value)))
    return tuple(found)


def _attachment(context: Context, raw: dict[str, Any], key: str, value: str) -> AttachmentRecord:
    metadata: dict[str, Any] = {"field": key}
    metadata.update({name: raw[name] for name in MEDIA_FIELDS if name in raw})
    named = raw.get("file_name") if key == "file" else None
    size_value = raw.get("photo_file_size" if key == "photo" else "file_size")
    size = size_value if isinstance(size_value, int) and not isinstance(size_value, bool) else None
    location: Path | None = None
    if _not_included(value):
        metadata.update(not_included=True, export_note=value)
        file_name = named if isinstance(named, str) else ""
    else:
        metadata["export_path"] = value
        file_name = (
            named
            if isinstance(named, str) and named
            else PurePosixPath(value.replace("\\", "/")).name
        )
        if _unsafe(value):
            metadata.update(not_included=True, unsafe_path=True)
            context.skipped["media path outside the export refused"] += 1
        else:
            location = safe_member(context.root, value)
            if location is None:
                metadata.update(not_included=True, missing=True)
    mime = raw.get("mime_type") if key == "file" else None
    if not isinstance(mime, str) or not mime:
        if key == "contact_vcard":
            mime = "text/vcard"
        else:
            mime = mimetypes.guess_type(file_name)[0] or ("image/jpeg" if key == "photo" else "")
    return AttachmentRecord(
        external_id=key,
        file_name=file_name,
        mime_type=mime,
        size=size,
        metadata=metadata,
        content=file_opener(location) if location is not None else None,
    )
