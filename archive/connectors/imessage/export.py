"""Apple Messages: the `chat.db` of macOS (~/Library/Messages) or the `sms.db` of an iOS
backup, with the `Attachments` folder beside it when there is one.

The database is only ever read. It is in WAL mode, and even a read-only connection opens
`-wal`/`-shm` files beside it, so it is opened `immutable=1`: SQLite then takes no locks and
writes nothing. A database with a non-empty `-wal` holds committed messages only that file
knows; it is copied (database and WAL) to a private temporary folder and the copy is read.
Its triggers call functions that exist only inside Messages.app; a reader never fires them.

Schemas differ between macOS and iOS versions: columns and whole tables may be missing, so
the schema is read first and every query is built from what is there.

Streaming: messages are read in ROWID order by one cursor; the message→chat and
message→attachment links are read by two more cursors in message order and merged in as the
messages pass, so memory stays bounded by the number of chats, handles and tapbacks.
Tapbacks (reactions, `associated_message_type` 2000-3999) are not messages: one cheap query
collects them first, and each is folded into its target's `metadata["reactions"]`.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import tempfile
import weakref
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from itertools import islice
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar
from urllib.parse import quote

import typedstream
from typedstream.archiving import GenericArchivedObject, TypedGroup
from typedstream.types.foundation import NSString

from archive.connectors.base import (
    ExportStream,
    FormatError,
    ImportItem,
    ReadOptions,
    file_opener,
    read_head,
    safe_member,
)
from archive.store.domain import (
    AccountRecord,
    AttachmentRecord,
    ChatRecord,
    IdentityRecord,
    MessageRecord,
)

PROVIDER = "imessage"
OWNER = IdentityRecord(external_id="me", display_name="Me")

_SQLITE_HEADER = b"SQLite format 3\x00"
_REQUIRED_TABLES = ("message", "handle", "chat")
_DATABASE_NAMES = ("chat.db", "sms.db")
_MAX_FOLDER_CANDIDATES = 20
_MAX_FOLDER_ENTRIES = 1000
# Where Messages keeps attachments (macOS, iOS); a stored path maps onto the export's
# Attachments folder after the first of these found in it.
_ATTACHMENT_MARKERS = (
    "/Library/Messages/Attachments/",
    "/Library/SMS/Attachments/",
    "/Attachments/",
)
_APPLE_EPOCH = datetime(2001, 1, 1, tzinfo=UTC)
_NANOSECOND_DATES = 100_000_000_000  # above this a date counts nanoseconds, not seconds
_GROUP_STYLE = 43
_TAPBACK_NAMES = {
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
_MAX_NESTING = 8

# What the reader asks of each table when the column exists (older schemas lack many).
_MESSAGE_COLUMNS = (
    "guid",
    "text",
    "attributedbody",
    "subject",
    "handle_id",
    "service",
    "account",
    "destination_caller_id",
    "date",
    "date_read",
    "date_delivered",
    "date_edited",
    "date_retracted",
    "is_from_me",
    "is_system_message",
    "item_type",
    "group_title",
    "group_action_type",
    "other_handle",
    "associated_message_guid",
    "associated_message_type",
    "thread_originator_guid",
    "thread_originator_part",
    "expressive_send_style_id",
    "balloon_bundle_id",
    "is_audio_message",
)
_CHAT_COLUMNS = ("guid", "style", "chat_identifier", "display_name", "service_name")
_ATTACHMENT_COLUMNS = (
    "guid",
    "filename",
    "mime_type",
    "transfer_name",
    "total_bytes",
    "uti",
    "is_sticker",
)

# Skip reasons, counted in ExportStream.skipped.
SKIP_NO_CHAT = "message without a chat"
SKIP_TAPBACK = "tapback (kept as reaction)"
SKIP_TAPBACK_UNDONE = "tapback removed or replaced later"
SKIP_TAPBACK_ORPHAN = "tapback on a message not in the export"
SKIP_BODY = "attributedBody unreadable (text left empty)"
SKIP_DANGLING_CHAT_LINK = "chat link to a message that no longer exists"
SKIP_DANGLING_ATTACHMENT_LINK = "attachment link to a message that no longer exists"
SKIP_MISSING_ATTACHMENT_ROW = "attachment link to an attachment row that no longer exists"
SKIP_ATTACHMENT_ABSENT = "attachment file not in the export (kept as metadata)"
SKIP_ATTACHMENT_REFUSED = "attachment path outside the Attachments folder (refused)"


# -- finding and opening the database ------------------------------------------------------


def _is_sqlite(path: Path) -> bool:
    return path.is_file() and read_head(path, len(_SQLITE_HEADER)) == _SQLITE_HEADER


def _connect_immutable(database: Path) -> sqlite3.Connection:
    """A connection that can neither write nor create files beside `database`."""
    uri = f"file:{quote(database.resolve().as_posix())}?immutable=1"
    connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
    _prepare(connection)
    return connection


def _prepare(connection: sqlite3.Connection) -> None:
    connection.text_factory = _text
    connection.execute("PRAGMA query_only = 1")


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _tables(connection: sqlite3.Connection) -> dict[str, set[str]]:
    """Table name → its column names (lower case)."""
    names = [
        str(row[0]).lower()
        for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    ]
    return {
        name: {str(row[1]).lower() for row in connection.execute(f'PRAGMA table_info("{name}")')}
        for name in names
        if '"' not in name
    }


def _holds_messages(path: Path) -> bool:
    if not _is_sqlite(path):
        return False
    try:
        connection = _connect_immutable(path)
        try:
            tables = _tables(connection)
        finally:
            connection.close()
    except (sqlite3.Error, OSError):
        return False
    return all(name in tables for name in _REQUIRED_TABLES)


def _database_in(folder: Path) -> Path | None:
    """The Messages database inside `folder`: chat.db / sms.db first, then any SQLite file."""
    named = [folder / name for name in _DATABASE_NAMES]
    try:
        entries = sorted(islice(folder.iterdir(), _MAX_FOLDER_ENTRIES))
    except OSError:
        return None
    others = [p for p in entries if p not in named and _is_sqlite(p)]
    for candidate in [*named, *others[:_MAX_FOLDER_CANDIDATES]]:
        if _holds_messages(candidate):
            return candidate
    return None


def _attachments_root(path: Path, database: Path) -> Path | None:
    for folder in (path, database.parent):
        candidate = folder / "Attachments"
        if folder.is_dir() and candidate.is_dir():
            return candidate
    return None


class _Database:
    """The open database, and the private copy to remove when it was read from one."""

    def __init__(self, database: Path) -> None:
        self.path = database
        self.copy_dir: Path | None = None
        wal = database.with_name(database.name + "-wal")
        try:
            pending_wal = wal.is_file() and wal.stat().st_size > 0
        except OSError:
            pending_wal = False
        if not pending_wal:
            self.connection = _connect_immutable(database)
            return
        # Committed messages still in the WAL: immutable=1 would not see them. Read a copy.
        self.copy_dir = Path(tempfile.mkdtemp(prefix="wirecat-imessage-"))
        try:
            copy = self.copy_dir / "chat.db"
            shutil.copyfile(database, copy)
            shutil.copyfile(wal, self.copy_dir / "chat.db-wal")
            self.connection = sqlite3.connect(copy, check_same_thread=False)
            _prepare(self.connection)
        except BaseException:
            shutil.rmtree(self.copy_dir, ignore_errors=True)
            raise

    def closer(self) -> Callable[[], None]:
        connection, copy_dir = self.connection, self.copy_dir

        def close() -> None:
            connection.close()
            if copy_dir is not None:
                shutil.rmtree(copy_dir, ignore_errors=True)

        return close


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


def _iso(value: Any) -> str | None:
    moment = apple_time(value)
    return moment.isoformat() if moment else None


def _first_string(value: Any, depth: int = 0) -> str | None:
    if depth > _MAX_NESTING:
        return None
    if isinstance(value, NSString):
        return value.value
    if isinstance(value, GenericArchivedObject):
        for group in value.contents:
            found = _first_string(group, depth + 1)
            if found is not None:
                return found
    elif isinstance(value, TypedGroup):
        for item in value.values:
            found = _first_string(item, depth + 1)
            if found is not None:
                return found
    return None


# The exact bytes Messages writes before the string of an attributedBody, in its two shapes:
# typedstream header (v4, little-endian, system 1000), the "@" root, the class chain
# NS[Mutable]AttributedString → NSObject, then the NS[Mutable]String object and its "+" type.
_TYPEDSTREAM_HEADER = b"\x04\x0bstreamtyped\x81\xe8\x03\x84\x01@\x84"
_STRING_PREFIXES = (
    _TYPEDSTREAM_HEADER + b"\x84\x84\x12NSAttributedString\x00\x84\x84\x08NSObject\x00\x85"
    b"\x92\x84\x84\x84\x08NSString\x01\x94\x84\x01+",
    _TYPEDSTREAM_HEADER + b"\x84\x84\x19NSMutableAttributedString\x00"
    b"\x84\x84\x12NSAttributedString\x00\x84\x84\x08NSObject\x00\x85"
    b"\x92\x84\x84\x84\x0fNSMutableString\x01\x84\x84\x08NSString\x01\x95\x84\x01+",
)
_END_OF_OBJECT = 0x86


def _canonical_text(blob: bytes) -> str | None:
    """The string of an attributedBody in the shape Messages writes, read directly (the
    general parser costs ~0.2 ms a message); None when the blob is shaped otherwise."""
    prefix = next((p for p in _STRING_PREFIXES if blob.startswith(p)), None)
    if prefix is None or len(blob) <= len(prefix):
        return None
    at = len(prefix)
    head = blob[at]
    if head == 0x81:  # a 2-byte length follows
        length, at = int.from_bytes(blob[at + 1 : at + 3], "little", signed=False), at + 3
    elif head == 0x82:  # a 4-byte length follows
        length, at = int.from_bytes(blob[at + 1 : at + 5], "little", signed=False), at + 5
    elif 0x80 <= head <= 0x91:  # another tag: not the shape expected here
        return None
    else:
        length, at = head, at + 1
    end = at + length
    if end >= len(blob) or blob[end] != _END_OF_OBJECT:
        return None
    try:
        return blob[at:end].decode("utf-8")
    except UnicodeDecodeError:
        return None


def attributed_text(blob: bytes) -> str | None:
    """The plain string of an archived NSAttributedString, or None when it is unreadable."""
    fast = _canonical_text(blob)
    if fast is not None:
        return fast
    try:
        root = typedstream.unarchive_from_data(blob)
        return _first_string(root)
    except Exception:  # a corrupt blob may fail anywhere inside the parser
        return None


def _identity(handle_id: str) -> IdentityRecord:
    if "@" in handle_id:
        return IdentityRecord(external_id=handle_id, email=handle_id)
    if _PHONE.match(handle_id) and any(ch.isdigit() for ch in handle_id):
        return IdentityRecord(external_id=handle_id, phone=handle_id)
    return IdentityRecord(external_id=handle_id, handle=handle_id)


def _tapback_target(guid: str) -> str:
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


class _Links:
    """Rows `(message_id, …)` in message order, handed out as the messages pass."""

    def __init__(self, rows: Iterator[tuple[Any, ...]] | None) -> None:
        self._rows = rows
        self._head = self._next()

    def _next(self) -> tuple[Any, ...] | None:
        if self._rows is None:
            return None
        return next(self._rows, None)

    def take(self, message_id: int) -> list[tuple[Any, ...]]:
        found: list[tuple[Any, ...]] = []
        while self._head is not None and self._head[0] < message_id:
            self._head = self._next()
        while self._head is not None and self._head[0] == message_id:
            found.append(self._head)
            self._head = self._next()
        return found


# -- the reader ----------------------------------------------------------------------------


class _Reading:
    """One pass over one database."""

    def __init__(self, path: Path, database: Path, options: ReadOptions, after: int = 0) -> None:
        self.source = path
        self.database = database
        self.after = after  # read messages past this ROWID (live polling); 0: all
        self.last_rowid = after
        self.opened = _Database(database)
        self.db = self.opened.connection
        try:
            self._load(path, database, options)
        except BaseException:
            self.opened.closer()()
            raise

    def _load(self, path: Path, database: Path, options: ReadOptions) -> None:
        self.skipped: Counter[str] = Counter()
        self.account = AccountRecord(
            provider=PROVIDER,
            external_id=options.account_name or "imessage-export",
            name=options.account_name or "Apple Messages",
            owner=OWNER,
        )
        self.attachments_root = _attachments_root(path, database)
        self.tables = self._schema()
        self.handles = self._handles()
        self.participants = self._participants()
        self.chats = self._chats()
        self.tapback_rows: Counter[str] = Counter()  # target guid → its tapback rows
        self.reactions = self._tapbacks()
        self.emitted_targets: set[str] = set()

    # errors ------------------------------------------------------------------------------
    def error(self, position: str, exc: BaseException) -> FormatError:
        problem = str(exc) or type(exc).__name__
        if isinstance(exc, sqlite3.DatabaseError) and "not a database" in problem:
            problem = "not an SQLite database (or encrypted)"
        return FormatError(self.database, position, problem)

    def _query(self, position: str, sql: str, *params: Any) -> list[Any]:
        try:
            return self.db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise self.error(position, exc) from exc

    # schema and small tables -------------------------------------------------------------
    def _schema(self) -> dict[str, set[str]]:
        try:
            tables = _tables(self.db)
        except sqlite3.Error as exc:
            raise self.error("database header and schema", exc) from exc
        missing = [name for name in _REQUIRED_TABLES if name not in tables]
        if missing:
            raise FormatError(
                self.database,
                "schema",
                f"no {', '.join(missing)} table: not an Apple Messages database",
            )
        return tables

    def has(self, table: str, column: str | None = None) -> bool:
        columns = self.tables.get(table)
        return columns is not None and (column is None or column in columns)

    def columns(self, table: str, wanted: tuple[str, ...], alias: str) -> list[str]:
        present = self.tables.get(table, set())
        return [f"{alias}.{name}" for name in wanted if name in present]

    def _handles(self) -> dict[int, IdentityRecord]:
        if not self.has("handle", "id"):
            return {}
        rows = self._query("handle table", "SELECT ROWID, id FROM handle")
        return {int(rowid): _identity(str(ident)) for rowid, ident in rows if ident}

    def _participants(self) -> dict[int, list[str]]:
        if not (
            self.has("chat_handle_join", "chat_id") and self.has("chat_handle_join", "handle_id")
        ):
            return {}
        found: dict[int, list[str]] = {}
        for chat_id, handle_id in self._query(
            "chat_handle_join table",
            "SELECT chat_id, handle_id FROM chat_handle_join ORDER BY chat_id, handle_id",
        ):
            identity = self.handles.get(handle_id) if isinstance(handle_id, int) else None
            if isinstance(chat_id, int) and identity is not None:
                found.setdefault(chat_id, []).append(identity.external_id)
        return found

    def _chats(self) -> dict[int, ChatRecord]:
        names = ["c.ROWID", *self.columns("chat", _CHAT_COLUMNS, "c")]
        found: dict[int, ChatRecord] = {}
        for values in self._query("chat table", f"SELECT {', '.join(names)} FROM chat c"):
            row = dict(zip([n.split(".", 1)[1].lower() for n in names], values, strict=True))
            rowid = int(row["rowid"])
            guid = str(row.get("guid") or f"chat-{rowid}")
            participants = self.participants.get(rowid, [])
            style = row.get("style")
            if style is not None:
                kind = "group" if style == _GROUP_STYLE else "dm"
            else:
                kind = "group" if len(participants) > 1 else "dm"
            metadata: dict[str, Any] = {"rowid": rowid}
            for key in ("chat_identifier", "service_name", "style"):
                if row.get(key) not in (None, ""):
                    metadata[key] = row[key]
            if participants:
                metadata["participants"] = participants
            found[rowid] = ChatRecord(
                external_id=guid,
                kind=kind,
                title=str(row.get("display_name") or row.get("chat_identifier") or ""),
                metadata=metadata,
            )
        return found

    def _tapbacks(self) -> dict[str, list[dict[str, Any]]]:
        if not (
            self.has("message", "associated_message_type")
            and self.has("message", "associated_message_guid")
        ):
            return {}
        extra = (
            ", m.associated_message_emoji"
            if self.has("message", "associated_message_emoji")
            else ""
        )
        handle = "m.handle_id" if self.has("message", "handle_id") else "0"
        mine = "m.is_from_me" if self.has("message", "is_from_me") else "0"
        date = "m.date" if self.has("message", "date") else "NULL"
        rows = self._query(
            "tapbacks (message rows with associated_message_type 2000-3999)",
            f"SELECT m.associated_message_guid, m.associated_message_type, {handle}, {mine}, "
            f"{date}{extra} FROM message m "
            "WHERE m.associated_message_type BETWEEN 2000 AND 3999 ORDER BY m.ROWID",
        )
        reactions: dict[str, list[dict[str, Any]]] = {}
        for target_guid, kind, handle_id, from_me, date_value, *emoji in rows:
            target = _tapback_target(str(target_guid or ""))
            self.tapback_rows[target] += 1
            if not target or not isinstance(kind, int):
                continue
            if from_me:
                by = OWNER.external_id
            else:
                identity = self.handles.get(handle_id) if isinstance(handle_id, int) else None
                by = identity.external_id if identity else ""
            name = _TAPBACK_NAMES.get(kind % 1000, f"tapback {kind % 1000}")
            # One tapback per person on a message, as Messages shows it: a new one replaces
            # theirs; a removal (3000 + n) takes back theirs of the same kind.
            current = reactions.get(target, [])
            if kind >= 3000:
                kept = [r for r in current if (r["by"], r["type"]) != (by, name)]
            else:
                reaction: dict[str, Any] = {"type": name, "by": by}
                when = _iso(date_value)
                if when:
                    reaction["at"] = when
                if emoji and emoji[0]:
                    reaction["emoji"] = str(emoji[0])
                kept = [*(r for r in current if r["by"] != by), reaction]
            if kept:
                reactions[target] = kept
            else:
                reactions.pop(target, None)
        return reactions

    def count_dangling(self) -> None:
        """Join rows whose message is gone (real databases keep some)."""
        for table, reason in (
            ("chat_message_join", SKIP_DANGLING_CHAT_LINK),
            ("message_attachment_join", SKIP_DANGLING_ATTACHMENT_LINK),
        ):
            if not self.has(table, "message_id"):
                continue
            ((count,),) = self._query(
                f"{table} table",
                f"SELECT COUNT(*) FROM {table} j WHERE j.message_id IS NOT NULL AND NOT EXISTS "
                "(SELECT 1 FROM message m WHERE m.ROWID = j.message_id)",
            )
            if count:
                self.skipped[reason] += count

    def total(self) -> int:
        ((count,),) = self._query("message table", "SELECT COUNT(*) FROM message")
        return max(int(count) - self.tapback_rows.total(), 0)

    # streaming ---------------------------------------------------------------------------
    def _message_cursor(self) -> tuple[list[str], sqlite3.Cursor]:
        names = [
            "rowid",
            *[c.split(".", 1)[1] for c in self.columns("message", _MESSAGE_COLUMNS, "m")],
        ]
        select = ", ".join(["m.ROWID", *self.columns("message", _MESSAGE_COLUMNS, "m")])
        where = ""
        if self.has("message", "associated_message_type"):
            where = "WHERE COALESCE(m.associated_message_type, 0) NOT BETWEEN 2000 AND 3999 "
        where = f"{where}{'AND' if where else 'WHERE'} m.ROWID > ? "
        cursor = self.db.execute(
            f"SELECT {select} FROM message m {where}ORDER BY m.ROWID", (self.after,)
        )
        return names, cursor

    def _chat_links(self) -> _Links:
        if not (
            self.has("chat_message_join", "message_id") and self.has("chat_message_join", "chat_id")
        ):
            return _Links(None)
        cursor = self.db.execute(
            "SELECT message_id, chat_id FROM chat_message_join "
            "WHERE typeof(message_id) = 'integer' AND message_id > ? ORDER BY message_id, chat_id",
            (self.after,),
        )
        return _Links(iter(cursor))

    def _attachment_links(self) -> tuple[list[str], _Links]:
        if not (
            self.has("message_attachment_join", "message_id")
            and self.has("message_attachment_join", "attachment_id")
            and self.has("attachment")
        ):
            return [], _Links(None)
        columns = self.columns("attachment", _ATTACHMENT_COLUMNS, "a")
        names = ["message_id", "attachment_id", "present", *[c.split(".", 1)[1] for c in columns]]
        cursor = self.db.execute(
            "SELECT j.message_id, j.attachment_id, a.ROWID IS NOT NULL"
            + "".join(f", {c}" for c in columns)
            + " FROM message_attachment_join j LEFT JOIN attachment a ON a.ROWID = j.attachment_id"
            " WHERE typeof(j.message_id) = 'integer' AND j.message_id > ?"
            " ORDER BY j.message_id, j.attachment_id",
            (self.after,),
        )
        return names, _Links(iter(cursor))

    def items(self) -> Iterator[ImportItem]:
        last = None
        try:
            names, messages = self._message_cursor()
            chat_links = self._chat_links()
            attachment_names, attachment_links = self._attachment_links()
            while True:
                position = f"message after ROWID {last}" if last is not None else "first message"
                try:
                    values = messages.fetchone()
                except sqlite3.Error as exc:
                    raise self.error(position, exc) from exc
                if values is None:
                    break
                row = dict(zip(names, values, strict=True))
                if not isinstance(row["rowid"], int) or (last is not None and row["rowid"] <= last):
                    # A damaged page can read as rows of garbage, out of ROWID order.
                    raise FormatError(
                        self.database, position, "ROWIDs out of order: the database is damaged"
                    )
                last = row["rowid"]
                self.last_rowid = last
                try:
                    item = self._item(
                        row,
                        [link[1] for link in chat_links.take(last)],
                        [
                            dict(zip(attachment_names, link, strict=True))
                            for link in attachment_links.take(last)
                        ],
                    )
                except (TypeError, ValueError, OverflowError) as exc:
                    raise self.error(f"message ROWID {last}", exc) from exc
                if item is not None:
                    yield item
        except sqlite3.Error as exc:
            position = f"message after ROWID {last}" if last is not None else "message table"
            raise self.error(position, exc) from exc
        self._count_tapbacks()
        self.count_dangling()

    def _count_tapbacks(self) -> None:
        for target, rows in self.tapback_rows.items():
            if target not in self.emitted_targets:
                self.skipped[SKIP_TAPBACK_ORPHAN] += rows
                continue
            kept = len(self.reactions.get(target, ()))
            self.skipped[SKIP_TAPBACK] += kept
            if rows > kept:
                self.skipped[SKIP_TAPBACK_UNDONE] += rows - kept

    def _chat_for(
        self, row: dict[str, Any], chat_ids: list[Any]
    ) -> tuple[ChatRecord | None, list[str]]:
        known = [self.chats[c] for c in chat_ids if isinstance(c, int) and c in self.chats]
        if known:
            return known[0], [c.external_id for c in known[1:]]
        if not self.has("chat_message_join"):
            # Databases without the join table: one conversation per handle.
            identity = self.handles.get(row.get("handle_id") or 0)
            if identity is not None:
                return ChatRecord(
                    external_id=f"handle:{identity.external_id}",
                    kind="dm",
                    title=identity.external_id,
                    metadata={"synthesized": True},
                ), []
        return None, []

    def _item(
        self, row: dict[str, Any], chat_ids: list[Any], attachment_rows: list[dict[str, Any]]
    ) -> ImportItem | None:
        rowid = int(row["rowid"])
        chat, other_chats = self._chat_for(row, chat_ids)
        if chat is None:
            self.skipped[SKIP_NO_CHAT] += 1
            return None
        guid = str(row.get("guid") or f"rowid-{rowid}")
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
                    identity = _identity(participants[0])
            if identity is not None:
                sender, identities = identity.external_id, (identity,)

        sent_at = apple_time(row.get("date"))
        if sent_at is None:
            sent_at = _APPLE_EPOCH
            metadata["date_missing"] = True

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
            when = _iso(row.get(column))
            if when:
                metadata[key] = when
        if row.get("associated_message_guid") and row.get("associated_message_type"):
            metadata["associated_message_guid"] = _tapback_target(
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


class IMessageReader:
    format: ClassVar[str] = "imessage"
    label: ClassVar[str] = "Apple Messages chat.db (macOS or iOS backup sms.db)"

    def detect(self, path: Path) -> bool:
        if path.is_dir():
            return _database_in(path) is not None
        return _holds_messages(path)

    def open(self, path: Path, options: ReadOptions) -> ExportStream:
        if path.is_dir():
            database = _database_in(path)
            if database is None:
                raise FormatError(path, "folder", "no Apple Messages database (chat.db) inside")
        else:
            database = path
        try:
            reading = _Reading(path, database, options)
        except sqlite3.Error as exc:
            raise FormatError(database, "database", str(exc)) from exc
        close = reading.opened.closer()
        try:
            total = reading.total()
        except BaseException:
            close()
            raise
        items = _closing(reading, close)
        stream = ExportStream(
            format=self.format,
            account=reading.account,
            items=items,
            total=total,
            skipped=reading.skipped,
            close=close,
        )
        # An abandoned, never-started stream still closes the database and removes any copy.
        weakref.finalize(items, close)
        return stream


@contextmanager
def poll_reading(database: Path, options: ReadOptions, *, after: int) -> Iterator[_Reading]:
    """One read of `database` (a chat.db itself) past ROWID `after`, for live polling:
    the same reading as an import's, closed (and its private copy removed) afterwards.
    `reading.items()` yields what is new; `reading.last_rowid` is how far it read."""
    try:
        reading = _Reading(database, database, options, after=after)
    except sqlite3.Error as exc:
        raise FormatError(database, "database", str(exc)) from exc
    try:
        yield reading
    finally:
        reading.opened.closer()()


def _closing(reading: _Reading, close: Callable[[], None]) -> Iterator[ImportItem]:
    try:
        yield from reading.items()
    finally:
        close()


READER = IMessageReader()
