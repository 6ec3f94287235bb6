"""Slack workspace exports, as the folder or the .zip Slack (or slackdump) writes.

Layout: `channels.json` (public channels), `groups.json` (private channels), `dms.json`,
`mpims.json` (group DMs), `users.json`, and one folder per conversation, named by the
channel's name (or by its id: DMs always, slackdump exports sometimes), holding one
`YYYY-MM-DD.json` file per day, each a JSON array of messages. A zip may wrap all of that in
one top folder. Day files are small and read whole; conversations, then days, then messages
are read in a fixed order so an interrupted import resumes at the same place.

Quirks taken care of: `created` a string (old exports) or a number; subtypes (joins, leaves,
bot_add and other events become service messages; bot_message, file_share, file_comment,
thread_broadcast stay messages; tombstone marks a deleted message); threads spanning day files
(a reply names its parent by `thread_ts`); messages with `files` and no `text`; `blocks` null;
`<@U…>`, `<#C…|name>`, `<!here>` and `<url|label>` markup, and HTML-escaped `& < >`.

Files are metadata only: an export holds their URLs, never their bytes, and nothing is
fetched. Zip members are read in memory, never extracted, and names with `..` are refused.
Nothing in an export says which user exported it, so every message is recorded as "in".
"""

from __future__ import annotations

import json
import re
import zipfile
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar, Protocol

from archive.connectors.base import (
    ZIP_ERRORS,
    ZIP_READ_ERRORS,
    ExportStream,
    FormatError,
    ImportItem,
    ReadOptions,
    export_account,
    json_dict,
    json_id,
    json_list,
    json_text,
    safe_member,
    safe_zip_member,
)
from archive.store.domain import AttachmentRecord, ChatRecord, IdentityRecord, MessageRecord

# The conversation lists, in reading order, with the kind of chat each holds.
LISTS = (
    ("channels.json", "channel"),
    ("groups.json", "group"),
    ("dms.json", "dm"),
    ("mpims.json", "group"),
)
USERS = "users.json"
SERVICE_SUBTYPES = frozenset(
    {
        "channel_join",
        "channel_leave",
        "group_join",
        "group_leave",
        "bot_add",
        "bot_remove",
        "bot_enable",
        "bot_disable",
        "app_conversation_join",
        "app_conversation_leave",
        "channel_topic",
        "channel_purpose",
        "channel_name",
        "channel_archive",
        "channel_unarchive",
        "group_topic",
        "group_purpose",
        "group_name",
        "group_archive",
        "group_unarchive",
        "channel_convert_to_private",
        "channel_convert_to_public",
        "channel_posting_permissions",
        "channel_canvas_updated",
        "pinned_item",
        "unpinned_item",
        "reminder_add",
        "sh_room_created",
    }
)
FILE_FIELDS = (
    "title",
    "filetype",
    "pretty_type",
    "mode",
    "is_external",
    "external_type",
    "url_private",
    "url_private_download",
    "permalink",
    "permalink_public",
    "created",
)
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}\.json$")
_TS = re.compile(r"^\s*(\d{1,12})(?:\.(\d+))?\s*$")
_MARKUP = re.compile(r"<([^<>]*)>")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:(?://)?")


def ts_datetime(value: object) -> datetime:
    """A Slack `ts` ("1736478514.897649", seconds since 1970 in UTC) as an aware datetime."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"not a Slack ts: {value!r}")
    match = _TS.match(value if isinstance(value, str) else f"{value:.6f}")
    if match is None:
        raise ValueError(f"not a Slack ts: {value!r}")
    micros = int((match.group(2) or "")[:6].ljust(6, "0"))
    return datetime.fromtimestamp(int(match.group(1)), tz=UTC) + timedelta(microseconds=micros)


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def slack_text(raw: str, users: dict[str, str], channels: dict[str, str]) -> str:
    """Slack's message markup as plain text: `<@U1>` → `@Name`, `<#C1|general>` → `#general`,
    `<url|label>` → `label (url)`, `<!here>` → `@here`, and `&amp; &lt; &gt;` unescaped."""
    out: list[str] = []
    position = 0
    for match in _MARKUP.finditer(raw):
        out.append(_unescape(raw[position : match.start()]))
        out.append(_markup(match.group(1), users, channels))
        position = match.end()
    out.append(_unescape(raw[position:]))
    return "".join(out)


def _markup(body: str, users: dict[str, str], channels: dict[str, str]) -> str:
    target, _, label = body.partition("|")
    label = _unescape(label)
    if target.startswith("@"):
        return "@" + (users.get(target[1:]) or label.lstrip("@") or target[1:])
    if target.startswith("#"):
        return "#" + (channels.get(target[1:]) or label.lstrip("#") or target[1:])
    if target.startswith("!"):
        command = target[1:]
        if command.startswith("subteam^"):
            return label if label.startswith("@") else "@" + (label or command[8:])
        if command.startswith("date^"):
            return label or command
        return label or "@" + command
    url = _unescape(target)
    bare = _SCHEME.sub("", url, count=1)
    if not label:
        return bare if url.lower().startswith("mailto:") else url
    if label in (url, bare):
        return label
    return f"{label} ({url})"


def _created(value: object) -> str | None:
    """`created`: a string in old exports, a number in new ones; as ISO 8601 UTC."""
    try:
        return ts_datetime(value).isoformat() if value not in (None, "", 0, "0") else None
    except (ValueError, OverflowError, OSError):
        return None


class _Source(Protocol):
    label: str  # how errors name the export

    def read(self, relative: str) -> bytes | None:
        """The bytes of a file of the export, or None when absent (or refused)."""
        ...

    def days(self, folder: str) -> list[str]:
        """The day files (relative paths, in date order) in one conversation's folder."""
        ...


def _plain_name(name: str) -> bool:
    """A folder name that stays inside the export: one path part, no `..`."""
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name


class _Folder:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.label = root.name

    def read(self, relative: str) -> bytes | None:
        found = safe_member(self.root, relative)
        return found.read_bytes() if found is not None else None

    def days(self, folder: str) -> list[str]:
        if not _plain_name(folder):
            return []
        directory = self.root / folder
        try:
            directory.resolve(strict=True).relative_to(self.root.resolve())
        except (OSError, ValueError):
            return []
        if not directory.is_dir():
            return []
        return sorted(
            f"{folder}/{entry.name}" for entry in directory.iterdir() if _DAY.match(entry.name)
        )


class _Zip:
    def __init__(self, path: Path, archive: zipfile.ZipFile) -> None:
        self.path = path
        self.archive = archive
        self.label = path.name
        self.prefix = _zip_prefix(archive.namelist())
        self._days: dict[str, list[str]] = {}
        for name in archive.namelist():
            if not name.startswith(self.prefix):
                continue
            parts = name[len(self.prefix) :].split("/")
            if len(parts) == 2 and _DAY.match(parts[1]) and _plain_name(parts[0]):
                self._days.setdefault(parts[0], []).append(name[len(self.prefix) :])
        for days in self._days.values():
            days.sort()

    def read(self, relative: str) -> bytes | None:
        info = safe_zip_member(self.archive, self.prefix + relative)
        if info is None:
            return None
        try:
            with self.archive.open(info) as member:
                return member.read()
        except ZIP_ERRORS as exc:
            raise FormatError(
                relative, f"member {info.filename} of {self.label}", f"damaged zip member: {exc}"
            ) from exc

    def days(self, folder: str) -> list[str]:
        return self._days.get(folder, []) if _plain_name(folder) else []


def _zip_prefix(names: list[str]) -> str:
    """The folder inside a zip that holds the export ("" when at the top)."""
    found = [
        name
        for name in names
        if PurePosixPath(name).name in (USERS, *(list_name for list_name, _ in LISTS))
        and ".." not in PurePosixPath(name).parts
    ]
    if not found:
        return ""
    shallowest = min(found, key=lambda name: (name.count("/"), name))
    return shallowest[: shallowest.rfind("/") + 1]


def _load(source: _Source, relative: str, where: str = "") -> Any:
    data = source.read(relative)
    if data is None:
        return None
    try:
        return json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise FormatError(relative, f"{where}byte {exc.start}", "not UTF-8 text") from exc
    except json.JSONDecodeError as exc:
        raise FormatError(
            relative, f"{where}line {exc.lineno} column {exc.colno}", f"broken JSON: {exc.msg}"
        ) from exc


def _display_name(user: dict[str, Any]) -> str:
    profile = json_dict(user.get("profile"))
    return (
        json_text(user.get("real_name")).strip()
        or json_text(profile.get("real_name")).strip()
        or json_text(profile.get("display_name")).strip()
        or json_text(user.get("name"))
    )


def _user_identity(user: dict[str, Any]) -> IdentityRecord | None:
    external_id = json_id(user.get("id"))
    if not external_id:
        return None
    return IdentityRecord(
        external_id=external_id,
        display_name=_display_name(user),
        handle=json_text(user.get("name")),
        email=json_text(json_dict(user.get("profile")).get("email")),
    )


class _Workspace:
    """What the lists say: people, conversations; then the messages, day by day."""

    def __init__(self, source: _Source, skipped: Counter[str]) -> None:
        self.source = source
        self.skipped = skipped
        self.identities: dict[str, IdentityRecord] = {}
        self.names: dict[str, str] = {}  # user id -> name shown for a mention
        self.channel_names: dict[str, str] = {}
        self.chats: list[tuple[ChatRecord, str]] = []  # (chat, folder)
        self._read_users()
        self._read_lists()

    def _read_users(self) -> None:
        users = _load(self.source, USERS)
        if users is None:
            return
        if not isinstance(users, list):
            raise FormatError(USERS, "top level", "expected a JSON array of users")
        for user in users:
            identity = _user_identity(json_dict(user))
            if identity is not None:
                self.identities[identity.external_id] = identity
                self.names[identity.external_id] = identity.display_name or identity.handle

    def _read_lists(self) -> None:
        entries: list[tuple[str, str, int, dict[str, Any]]] = []
        for list_name, kind in LISTS:
            listed = _load(self.source, list_name)
            if listed is None:
                continue
            if not isinstance(listed, list):
                raise FormatError(list_name, "top level", "expected a JSON array")
            for index, entry in enumerate(listed):
                if not isinstance(entry, dict) or not json_id(entry.get("id")):
                    raise FormatError(list_name, f"item #{index + 1}", "a conversation needs an id")
                entries.append((list_name, kind, index, entry))
                if json_text(entry.get("name")):
                    self.channel_names[json_id(entry["id"])] = entry["name"]
        seen: set[str] = set()
        for list_name, kind, _index, entry in entries:
            chat_id = json_id(entry["id"])
            if chat_id in seen:
                continue
            seen.add(chat_id)
            chat = self._chat(entry, kind, list_name)
            name = json_text(entry.get("name"))
            folder = next(
                (f for f in dict.fromkeys((name, chat_id)) if f and self.source.days(f)), ""
            )
            if folder:
                self.chats.append((chat, folder))

    def _chat(self, entry: dict[str, Any], kind: str, list_name: str) -> ChatRecord:
        chat_id = json_id(entry["id"])
        name = json_text(entry.get("name"))
        members = [json_id(member) for member in json_list(entry.get("members")) if json_id(member)]
        metadata: dict[str, Any] = {"list": list_name}
        if name:
            metadata["name"] = name
        if created := _created(entry.get("created")):
            metadata["created"] = created
        for key in ("topic", "purpose"):
            value = json_text(json_dict(entry.get(key)).get("value"))
            if value:
                metadata[key] = value
        for key in ("creator", "user"):
            if json_id(entry.get(key)):
                metadata[key] = json_id(entry[key])
        for key in ("is_archived", "is_general", "is_private"):
            if entry.get(key):
                metadata[key] = True
        if members:
            metadata["members"] = members
        if kind == "dm" or list_name == "mpims.json" or not name:
            people = [self.names.get(member, member) for member in members]
            title = ", ".join(people) or name or chat_id
        else:
            title = f"#{name}"
        return ChatRecord(external_id=chat_id, kind=kind, title=title, metadata=metadata)

    def items(self) -> Iterator[ImportItem]:
        for chat, folder in self.chats:
            for relative in self.source.days(folder):
                where = f"in folder {folder!r}, "
                day = _load(self.source, relative, where)
                if day is None:
                    continue
                if not isinstance(day, list):
                    raise FormatError(relative, f"{where}top level", "expected a JSON array")
                for index, raw in enumerate(day):
                    item = self._item(chat, raw, relative, f"{where}message #{index + 1}")
                    if item is not None:
                        yield item

    def _sender(self, raw: dict[str, Any]) -> IdentityRecord | None:
        # Old file_comment messages name their author only in the comment.
        user = json_id(raw.get("user")) or json_id(json_dict(raw.get("comment")).get("user"))
        if user:
            known = self.identities.get(user)
            if known is not None:
                return known
            profile = json_dict(raw.get("user_profile"))
            display = (
                json_text(profile.get("real_name"))
                or json_text(profile.get("display_name"))
                or json_text(raw.get("username"))
            )
            return IdentityRecord(
                external_id=user,
                display_name=display or ("Slackbot" if user == "USLACKBOT" else ""),
                handle=json_text(profile.get("name")),
            )
        bot = json_dict(raw.get("bot_profile"))
        bot_id = json_id(raw.get("bot_id")) or json_id(bot.get("id"))
        if bot_id:
            name = json_text(raw.get("username")) or json_text(bot.get("name"))
            return IdentityRecord(external_id=bot_id, display_name=name, handle=name)
        return None

    def _item(self, chat: ChatRecord, raw: Any, relative: str, where: str) -> ImportItem | None:
        if not isinstance(raw, dict):
            raise FormatError(relative, where, "a message must be a JSON object")
        if raw.get("type", "message") != "message":
            self.skipped[f"Slack item of type {raw.get('type')!r}"] += 1
            return None
        subtype = json_text(raw.get("subtype"))
        if subtype == "message_deleted":
            self.skipped["Slack message_deleted event"] += 1
            return None
        outer = raw
        if subtype == "message_changed" and isinstance(raw.get("message"), dict):
            raw = raw["message"]
        ts = raw.get("ts")
        if not json_id(ts):
            self.skipped["Slack message without ts"] += 1
            return None
        message_id = json_id(ts)
        try:
            sent_at = ts_datetime(ts)
            edited = json_dict(raw.get("edited"))
            edited_at = ts_datetime(edited["ts"]) if json_id(edited.get("ts")) else None
            if outer is not raw and edited_at is None:
                edited_at = ts_datetime(outer.get("ts"))
        except (ValueError, OverflowError, OSError) as exc:
            raise FormatError(relative, f"{where} (ts {message_id})", str(exc)) from exc

        sender = self._sender(raw)
        identities: dict[str, IdentityRecord] = {}
        if sender is not None:
            identities[sender.external_id] = sender
        raw_text = json_text(raw.get("text"))
        for mentioned in re.findall(r"<@([A-Z0-9]+)", raw_text):
            if mentioned in self.identities:
                identities.setdefault(mentioned, self.identities[mentioned])
        if sender is not None and sender.display_name:
            # Known from the message alone (not in users.json): mentions of them read well.
            self.names.setdefault(sender.external_id, sender.display_name)
        text = slack_text(raw_text, self.names, self.channel_names)

        metadata: dict[str, Any] = {}
        if subtype:
            metadata["subtype"] = subtype
        if raw_text and raw_text != text:
            metadata["raw_text"] = raw_text
        for key in ("bot_id", "username", "parent_user_id", "client_msg_id"):
            if json_id(raw.get(key)):
                metadata[key] = json_id(raw[key])
        if edited.get("user"):
            metadata["edited_by"] = json_id(edited["user"])
        reactions = [
            {
                "name": json_text(r.get("name")),
                "count": r.get("count") if isinstance(r.get("count"), int) else 1,
                "users": [json_id(u) for u in json_list(r.get("users")) if json_id(u)],
            }
            for r in map(json_dict, json_list(raw.get("reactions")))
            if json_text(r.get("name"))
        ]
        if reactions:
            metadata["reactions"] = reactions
        thread_ts = json_id(raw.get("thread_ts"))
        reply_to = thread_ts if thread_ts and thread_ts != message_id else ""
        if thread_ts and not reply_to and raw.get("reply_count"):
            metadata["thread"] = {
                "reply_count": raw.get("reply_count"),
                "reply_users": [json_id(u) for u in json_list(raw.get("reply_users"))],
                "latest_reply": json_id(raw.get("latest_reply")),
            }
        if legacy := [
            json_dict(a) for a in json_list(raw.get("attachments")) if isinstance(a, dict)
        ]:
            metadata["attachments"] = [
                {k: a[k] for k in ("fallback", "title", "title_link", "text") if a.get(k)}
                for a in legacy
            ]
        if raw.get("pinned_to"):
            metadata["pinned_to"] = [json_id(c) for c in json_list(raw.get("pinned_to"))]

        deleted_at = None
        if subtype == "tombstone" or raw.get("is_deleted"):
            # The export does not say when; the time the message was sent is the only bound.
            deleted_at = edited_at or sent_at
            metadata["deleted_time_unknown"] = True

        files = [f for f in json_list(raw.get("files")) if isinstance(f, dict)]
        if isinstance(raw.get("file"), dict):  # old exports: one file, singular
            files.append(raw["file"])
        attachments = tuple(self._file(f, index) for index, f in enumerate(files))
        message = MessageRecord(
            chat_external_id=chat.external_id,
            external_id=message_id,
            sent_at=sent_at,
            text=text,
            sender_external_id=sender.external_id if sender else None,
            kind="service" if subtype in SERVICE_SUBTYPES else "text",
            reply_to_external_id=reply_to,
            edited_at=edited_at,
            deleted_at=deleted_at,
            raw_json=json.dumps(outer, ensure_ascii=False, separators=(",", ":")),
            metadata=metadata,
            attachments=attachments,
        )
        return ImportItem(chat=chat, message=message, identities=tuple(identities.values()))

    def _file(self, raw: dict[str, Any], index: int) -> AttachmentRecord:
        size = raw.get("size")
        return AttachmentRecord(
            external_id=json_id(raw.get("id")) or f"#{index}",
            file_name=json_text(raw.get("name")) or json_text(raw.get("title")),
            mime_type=json_text(raw.get("mimetype")),
            size=size if isinstance(size, int) and not isinstance(size, bool) else None,
            metadata={k: raw[k] for k in FILE_FIELDS if raw.get(k) not in (None, "")},
        )


def _head(path: Path) -> bytes:
    with path.open("rb") as handle:
        return handle.read(64)


def _head_is_array(data: bytes | None) -> bool:
    return data is not None and data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[")


class SlackReader:
    format: ClassVar[str] = "slack"
    label: ClassVar[str] = "Slack workspace export (folder or zip)"

    def detect(self, path: Path) -> bool:
        try:
            if path.is_dir():
                lists = [path / name for name, _ in LISTS]
                return any(p.is_file() and _head_is_array(_head(p)) for p in lists)
            if not path.is_file() or not zipfile.is_zipfile(path):
                return False
            with zipfile.ZipFile(path) as archive:
                source = _Zip(path, archive)
                for name, _ in LISTS:
                    info = safe_zip_member(archive, source.prefix + name)
                    if info is not None:
                        with archive.open(info) as member:
                            if _head_is_array(member.read(64)):
                                return True
        except ZIP_READ_ERRORS:
            return False
        return False

    def open(self, path: Path, options: ReadOptions) -> ExportStream:
        stream = ExportStream(
            format=self.format,
            account=export_account("slack", options),
            items=iter(()),
        )
        if path.is_dir():
            workspace = _Workspace(_Folder(path), stream.skipped)
            stream.items = workspace.items()
        else:
            archive = _open_zip(path)
            try:
                _Workspace(_Zip(path, archive), stream.skipped)  # fails early on broken lists
            finally:
                archive.close()
            stream.items = _zip_items(path, stream.skipped)
        return stream


def _open_zip(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise FormatError(path, "zip directory", f"not a readable zip: {exc}") from exc


def _zip_items(path: Path, skipped: Counter[str]) -> Iterator[ImportItem]:
    with _open_zip(path) as archive:
        yield from _Workspace(_Zip(path, archive), skipped).items()


READER = SlackReader()
