"""Apple Messages: the `chat.db` of macOS (~/Library/Messages) or the `sms.db` of an iOS
backup, with the `Attachments` folder beside it when there is one.

Its parts: database.py finds and opens the database and reads its schema, attributed_body.py
reads the text of an `attributedBody`, translation.py turns rows into records.

Streaming: messages are read in ROWID order by one cursor; the message→chat and
message→attachment links are read by two more cursors in message order and merged in as the
messages pass, so memory stays bounded by the number of chats, handles and tapbacks.
Tapbacks (reactions, `associated_message_type` 2000-3999) are not messages: one cheap query
collects them first, and each is folded into its target's `metadata["reactions"]`.
"""

from __future__ import annotations

import sqlite3
import weakref
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from archive.connectors.base import ExportStream, FormatError, ImportItem, ReadOptions
from archive.connectors.estimates import file_time, neighbours_dated
from archive.connectors.imessage.database import (
    Database,
    attachments_folder,
    database_in,
    holds_messages,
    missing_columns,
    missing_tables,
    schema_of,
)
from archive.connectors.imessage.translation import (
    OWNER,
    TAPBACK_NAMES,
    Translation,
    handle_identity,
    iso_time,
    tapback_target,
)
from archive.store.domain import AccountRecord, ChatRecord, IdentityRecord

PROVIDER = "imessage"
_GROUP_STYLE = 43

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


# Skip reasons, counted in ExportStream.skipped (translation.py counts the others).
SKIP_DANGLING_CHAT_LINK = "chat link to a message that no longer exists"
SKIP_DANGLING_ATTACHMENT_LINK = "attachment link to a message that no longer exists"


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
        self.opened = Database(database)
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
        attachments_root = attachments_folder(path, database)
        self.tables = self._schema()
        self.handles = self._handles()
        self.participants = self._participants()
        self.chats = self._chats()
        self.tapback_rows: Counter[str] = Counter()  # target guid → its tapback rows
        self.reactions = self._tapbacks()
        self.translation = Translation(
            handles=self.handles,
            chats=self.chats,
            reactions=self.reactions,
            tapback_rows=self.tapback_rows,
            attachments_root=attachments_root,
            chats_joined=self.has("chat_message_join"),
            skipped=self.skipped,
            database_time=file_time(database),
        )

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
            tables = schema_of(self.db)
        except sqlite3.Error as exc:
            raise self.error("database header and schema", exc) from exc
        missing = missing_tables(tables)
        if missing:
            raise FormatError(
                self.database, "schema", f"no {missing} table: not an Apple Messages database"
            )
        if lacking := missing_columns(tables):
            raise FormatError(
                self.database,
                "schema",
                f"its message table lacks the columns a message needs ({lacking}):"
                " not an Apple Messages database",
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
        return {int(rowid): handle_identity(str(ident)) for rowid, ident in rows if ident}

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
        if not self.has("chat"):  # a trimmed backup: one chat per handle (translation.py)
            return {}
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
            target = tapback_target(str(target_guid or ""))
            self.tapback_rows[target] += 1
            if not target or not isinstance(kind, int):
                continue
            if from_me:
                by = OWNER.external_id
            else:
                identity = self.handles.get(handle_id) if isinstance(handle_id, int) else None
                by = identity.external_id if identity else ""
            name = TAPBACK_NAMES.get(kind % 1000, f"tapback {kind % 1000}")
            # One tapback per person on a message, as Messages shows it: a new one replaces
            # theirs; a removal (3000 + n) takes back theirs of the same kind.
            current = reactions.get(target, [])
            if kind >= 3000:
                kept = [r for r in current if (r["by"], r["type"]) != (by, name)]
            else:
                reaction: dict[str, Any] = {"type": name, "by": by}
                when = iso_time(date_value)
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
        """The messages in ROWID order; an undated one takes its neighbours' time (a ROWID
        is given as a message arrives, so neighbours are close in time, whatever chat)."""
        return neighbours_dated(self._row_items(), scope=_whole_database)

    def _row_items(self) -> Iterator[ImportItem]:
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
                    item = self.translation.item(
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
        self.translation.count_tapbacks()
        self.count_dangling()


def _whole_database(item: ImportItem) -> None:
    return None


class IMessageReader:
    format: ClassVar[str] = "imessage"
    label: ClassVar[str] = "Apple Messages chat.db (macOS or iOS backup sms.db)"

    def detect(self, path: Path) -> bool:
        if path.is_dir():
            return database_in(path) is not None
        return holds_messages(path)

    def open(self, path: Path, options: ReadOptions) -> ExportStream:
        if path.is_dir():
            database = database_in(path)
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
    """The import's messages; a database that yields none is an error saying why, not an
    import of nothing."""
    try:
        found = 0
        for item in reading.items():
            found += 1
            yield item
        if not found:
            raise _nothing_read(reading)
    finally:
        close()


def _nothing_read(reading: _Reading) -> FormatError:
    rows = reading.total()
    if not rows:
        why = "its message table holds no message"
    else:
        why = f"none of its {rows:,} messages could be read"
        if reading.skipped:
            counts = sorted(reading.skipped.items())
            why += " (passed over: " + ", ".join(f"{n:,} {reason}" for reason, n in counts) + ")"
    return FormatError(reading.database, "the whole database", f"{why}: nothing to import")


READER = IMessageReader()
