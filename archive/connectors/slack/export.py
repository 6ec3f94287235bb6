"""Slack workspace exports, as the folder or the .zip Slack (or slackdump) writes.

Layout: `channels.json` (public channels), `groups.json` (private channels), `dms.json`,
`mpims.json` (group DMs), `users.json`, and one folder per conversation, named by the
channel's name (or by its id: DMs always, slackdump exports sometimes), holding one
`YYYY-MM-DD.json` file per day, each a JSON array of messages. A zip may wrap all of that in
one top folder. Small files are read whole, larger ones streamed (json_files.py); zip members
are checked before and while they inflate; conversations, then days, then messages are read
in a fixed order so an interrupted import resumes at the same place. An export that yields no
message at all is an error saying why, not an empty success.

Quirks taken care of: `created` a string (old exports) or a number; subtypes (joins, leaves,
bot_add and other events become service messages; bot_message, file_share, file_comment,
thread_broadcast stay messages; tombstone marks a deleted message); threads spanning day files
(a reply names its parent by `thread_ts`); messages with `files` and no `text`; `blocks` null;
`<@U…>`, `<#C…|name>`, `<!here>` and `<url|label>` markup, and HTML-escaped `& < >`.

How a message becomes records (its time and id from `ts`, markup as plain text, a message
without a readable `ts` kept with an estimated time) is translation.py's.

Files are metadata only: an export holds their URLs, never their bytes, and nothing is
fetched. Zip members are read in memory, never extracted, and names with `..` are refused.
Nothing in an export says which user exported it, so every message is recorded as "in".
"""

from __future__ import annotations

import io
import re
import zipfile
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

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
from archive.connectors.estimates import neighbours_dated
from archive.connectors.limits import checked_member, guarded_member
from archive.connectors.slack.json_files import Source, load
from archive.connectors.slack.translation import Translation, ts_datetime
from archive.store.domain import ChatRecord, IdentityRecord

# The conversation lists, in reading order, with the kind of chat each holds.
LISTS = (
    ("channels.json", "channel"),
    ("groups.json", "group"),
    ("dms.json", "dm"),
    ("mpims.json", "group"),
)
USERS = "users.json"
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}\.json$")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _created(value: object) -> str | None:
    """`created`: a string in old exports, a number in new ones; as ISO 8601 UTC."""
    try:
        return ts_datetime(value).isoformat() if value not in (None, "", 0, "0") else None
    except (ValueError, OverflowError, OSError):
        return None


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

    def size(self, relative: str) -> int | None:
        found = safe_member(self.root, relative)
        return found.stat().st_size if found is not None else None

    def open(self, relative: str) -> io.BufferedReader | None:
        found = safe_member(self.root, relative)
        return found.open("rb") if found is not None else None

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
        checked_member(self.path, info)
        try:
            with self.archive.open(info) as member:
                return member.read()
        except ZIP_ERRORS as exc:
            raise FormatError(
                relative, f"member {info.filename} of {self.label}", f"damaged zip member: {exc}"
            ) from exc

    def size(self, relative: str) -> int | None:
        info = safe_zip_member(self.archive, self.prefix + relative)
        return info.file_size if info is not None else None

    def open(self, relative: str) -> io.BufferedReader | None:
        info = safe_zip_member(self.archive, self.prefix + relative)
        if info is None:
            return None
        checked_member(self.path, info)  # size and ratio, before anything is inflated
        return guarded_member(self.path, info, self.archive.open(info))

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

    def __init__(self, source: Source, skipped: Counter[str]) -> None:
        self.source = source
        self.skipped = skipped
        self.identities: dict[str, IdentityRecord] = {}
        self.names: dict[str, str] = {}  # user id -> name shown for a mention
        self.channel_names: dict[str, str] = {}
        self.chats: list[tuple[ChatRecord, str]] = []  # (chat, folder)
        self.translation = Translation(self.identities, self.names, self.channel_names, skipped)
        self._read_users()
        self._read_lists()

    def _read_users(self) -> None:
        users = load(self.source, USERS, expected="expected a JSON array of users")
        if users is None:
            return
        for user in users:
            identity = _user_identity(json_dict(user))
            if identity is not None:
                self.identities[identity.external_id] = identity
                self.names[identity.external_id] = identity.display_name or identity.handle

    def _read_lists(self) -> None:
        entries: list[tuple[str, str, int, dict[str, Any]]] = []
        for list_name, kind in LISTS:
            listed = load(self.source, list_name)
            if listed is None:
                continue
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
                day = load(self.source, relative, where)
                if day is None:
                    continue
                # An undated message's neighbours are those of its own day file.
                yield from neighbours_dated(self._day_items(chat, day, relative, where))

    def _day_items(
        self, chat: ChatRecord, day: Iterator[Any], relative: str, where: str
    ) -> Iterator[ImportItem]:
        date = _day_date(relative)
        for index, raw in enumerate(day):
            where_item = f"{where}message #{index + 1}"
            item = self.translation.item(chat, raw, relative, where_item, date)
            if item is not None:
                yield item


def _day_date(relative: str) -> datetime:
    """The date a day file is named after (midnight UTC), the provisional time of its
    undated messages; the Unix epoch for a name that is no date."""
    try:
        return datetime.strptime(PurePosixPath(relative).stem, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        return _EPOCH


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
            items = workspace.items()
        else:
            archive = _open_zip(path)
            try:  # fails early on broken lists
                workspace = _Workspace(_Zip(path, archive), stream.skipped)
            finally:
                archive.close()
            items = _zip_items(path, stream.skipped)
        stream.items = _not_empty(path, items, workspace, stream.skipped)
        return stream


def _open_zip(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise FormatError(path, "zip directory", f"not a readable zip: {exc}") from exc


def _zip_items(path: Path, skipped: Counter[str]) -> Iterator[ImportItem]:
    with _open_zip(path) as archive:
        yield from _Workspace(_Zip(path, archive), skipped).items()


def _not_empty(
    path: Path, items: Iterator[ImportItem], workspace: _Workspace, skipped: Counter[str]
) -> Iterator[ImportItem]:
    """`items`; none at all is an error saying why, not an import of nothing."""
    found = 0
    for item in items:
        found += 1
        yield item
    if found:
        return
    lists = [name for name, _ in (*LISTS, (USERS, "")) if workspace.source.size(name) is not None]
    if not any(name != USERS for name in lists):
        why = "has no conversation list (channels.json, groups.json, dms.json, mpims.json)"
    elif not workspace.chats:
        why = "lists conversations, but none has a folder of day files (YYYY-MM-DD.json)"
    else:
        days = sum(len(workspace.source.days(folder)) for _, folder in workspace.chats)
        why = f"its {days:,} day files hold no message"
        if skipped:
            passed = ", ".join(f"{count:,} {reason}" for reason, count in sorted(skipped.items()))
            why += f" (passed over: {passed})"
    raise FormatError(path, "the whole export", f"{why}: nothing to import")


READER = SlackReader()
