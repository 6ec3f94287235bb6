"""WhatsApp chat export: the text WhatsApp writes with "Export chat", alone (`.txt`), in the
`.zip` that carries it with the media (`_chat.txt` from iOS, `WhatsApp Chat with X.txt`
from Android), or in the folder such a zip was unpacked into.

Its parts: grammar.py reads the lines (every layout, system lines, dates and their
day/month order), chat_text.py finds the chat text in a `.txt`, `.zip` or folder and reads
it, translation.py turns one message into records. This module reads the export in two
passes: the first over the dates and authors (what only the whole file tells), the second
over the messages.

Decisions the format forces (the export holds no ids and no time zone)
- A chat whose day/month order was guessed (nothing voted) carries
  `metadata["date_order_guessed"] = True`; one with votes both ways
  `metadata["date_order_conflict"] = True`.
- The chat id is `title:<chat title>`, the title taken from the chat text's name
  (`WhatsApp Chat with X.txt` → X), else the zip's or folder's name (`WhatsApp Chat - X`
  → X, a trailing download counter ` (1)` dropped), else the name iOS writes before its
  encryption notice, else the bare file name. Re-imports of the same export (and the
  zip and its unpacked `.txt`) land in the same chat.
- A chat is a group when it has more than two authors or group system lines.
- The owner is unknown unless `--account NAME` names an author of the file: then NAME's
  messages are outbound and NAME is the account's own identity. Without it, a one-to-one
  chat named after one of its two authors was exported by the other: their messages are
  outbound.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import zipfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

from archive.connectors.base import (
    ZIP_ERRORS,
    ExportStream,
    FormatError,
    ImportItem,
    LongText,
    ReadOptions,
    import_limits,
)
from archive.connectors.estimates import neighbours_dated
from archive.connectors.kept_whole import with_whole_text
from archive.connectors.whatsapp.chat_text import SeveralChats, Source, locate, read_lines
from archive.connectors.whatsapp.grammar import (
    Head,
    Survey,
    clean_name,
    identity_key,
    parse_line,
    strip_marks,
)
from archive.connectors.whatsapp.translation import Context, message_item
from archive.store.domain import AccountRecord, ChatRecord, IdentityRecord

PROVIDER = "whatsapp"
DEFAULT_ACCOUNT = "whatsapp-export"

_TITLE = re.compile(
    r"^(?:whats\s*app[\s_-]*chat(?:\s+(?:with|mit|met|con|com|avec))?"
    r"|chat\s+(?:de\s+)?whats\s*app\s+con|conversa\s+do\s+whats\s*app\s+com"
    r"|discussion\s+whats\s*app\s+avec)(?:\s*[-\u2013]\s*|\s+)(?P<title>\S.*)$",
    re.IGNORECASE,
)
_DOWNLOAD_COUNTER = re.compile(r"\s*\(\d{1,3}\)$")


# ---------------------------------------------------------------------------------------
# The chat: its title and id


def _title_from(name: str) -> str | None:
    match = _TITLE.match(clean_name(name))
    if match is None:
        return None
    return _DOWNLOAD_COUNTER.sub("", match["title"]).strip() or None


def _chat_title(source: Source, survey: Survey) -> str:
    stem = PurePosixPath(source.text_name).stem
    own = stem if stem.lower() != "_chat" else ""
    return (
        (own and _title_from(own))
        or _title_from(source.container_name)
        or survey.notice_author
        or clean_name(_DOWNLOAD_COUNTER.sub("", own or source.container_name or stem))
        or "WhatsApp chat"
    )


def _chat_id(title: str) -> str:
    key = f"title:{title}"
    if len(key) <= 200:
        return key
    return f"title-sha256:{hashlib.sha256(title.encode()).hexdigest()}"


# ---------------------------------------------------------------------------------------
# The second pass: the messages


def _messages(ctx: Context) -> Iterator[ImportItem]:
    archive = zipfile.ZipFile(ctx.source.given) if ctx.source.member is not None else None
    ctx.archive = archive
    limit = import_limits().text_chars
    try:
        pending: tuple[Head, int] | None = None
        lines: list[str] = []
        held = 0  # characters in `lines`
        # A message longer than the text cap: all of it goes to a spill file as it is
        # read, the first part stays its text (archive/connectors/limits.py).
        whole: LongText | None = None
        for number, line in read_lines(ctx.source):
            head = parse_line(line)
            if head is None:
                if pending is not None:  # the first line always has a timestamp
                    piece = strip_marks(line)
                    if whole is None and held + len(piece) > limit:
                        whole = LongText(limit)
                        whole.add("\n".join(lines))
                    if whole is not None:
                        whole.add("\n" + piece)
                    else:
                        lines.append(piece)
                        held += len(piece) + 1
                continue
            if pending is not None:
                yield _item(ctx, pending, lines, whole)
            pending = (head, number)
            lines, held, whole = [head.text], len(head.text), None
        if pending is not None:
            yield _item(ctx, pending, lines, whole)
    finally:
        ctx.archive = None
        if archive is not None:
            archive.close()


def _item(
    ctx: Context, pending: tuple[Head, int], lines: list[str], whole: LongText | None
) -> ImportItem:
    if whole is None:
        return message_item(ctx, pending[0], pending[1], lines)
    item = message_item(ctx, pending[0], pending[1], [whole.text()])
    return dataclasses.replace(item, message=with_whole_text(item.message, whole))


# ---------------------------------------------------------------------------------------
# The reader


_DETECT_ERRORS: tuple[type[BaseException], ...] = (OSError, ValueError, SeveralChats, *ZIP_ERRORS)


class WhatsAppReader:
    format: ClassVar[str] = "whatsapp"
    label: ClassVar[str] = "WhatsApp chat export (.txt or .zip)"

    def detect(self, path: Path) -> bool:
        try:
            return locate(path) is not None
        except _DETECT_ERRORS:
            return False

    def open(self, path: Path, options: ReadOptions) -> ExportStream:
        try:
            source = locate(path)
        except ZIP_ERRORS as exc:
            raise FormatError(path, "archive", f"the zip cannot be read: {exc}") from None
        except SeveralChats as several:
            problem = f"holds several chats ({several}); import them one by one"
            raise FormatError(path, "contents", problem) from None
        if source is None:
            if path.is_file() and zipfile.is_zipfile(path):
                problem = "no WhatsApp chat text (_chat.txt or 'WhatsApp Chat with ….txt') in it"
                raise FormatError(path, "archive", problem)
            raise FormatError(path, "line 1", "not a WhatsApp chat export (no timestamp)")

        survey = Survey()
        for _number, line in read_lines(source):
            head = parse_line(line)
            if head is not None:
                survey.add(head)  # an impossible date is kept, estimated (translation.py)

        title = _chat_title(source, survey)
        group = len(survey.authors) > 2 or survey.group_lines
        chat_metadata: dict[str, Any] = {
            "date_order": "day_first" if survey.day_first else "month_first",
            "time_zone_unknown": True,
        }
        if survey.guessed:
            chat_metadata["date_order_guessed"] = True
        if survey.conflict:
            chat_metadata["date_order_conflict"] = True
        chat = ChatRecord(
            external_id=_chat_id(title),
            kind="group" if group else "dm",
            title=title,
            metadata=chat_metadata,
        )

        owner_key: str | None = None
        owner: IdentityRecord | None = None
        if options.account_name:
            name = clean_name(options.account_name)
            key, phone = identity_key(name)
            owner_key = key.casefold()
            for author, written in survey.authors.items():
                if author.casefold() == owner_key:
                    owner = IdentityRecord(external_id=author, display_name=written, phone=phone)
                    break
        elif not group:
            owner_key = _other_author(title, survey)
        account = AccountRecord(
            provider=PROVIDER,
            external_id=options.account_name or DEFAULT_ACCOUNT,
            name=options.account_name or "WhatsApp export",
            owner=owner,
        )
        skipped: Counter[str] = Counter()
        ctx = Context(
            source=source,
            chat=chat,
            day_first=survey.day_first,
            owner_key=owner_key,
            skipped=skipped,
        )
        return ExportStream(
            format=self.format,
            account=account,
            items=neighbours_dated(_messages(ctx)),
            total=survey.messages,
            skipped=skipped,
        )


READER = WhatsAppReader()


def _other_author(title: str, survey: Survey) -> str | None:
    """A one-to-one chat is named after the other party ("WhatsApp Chat with Ada"): when
    one of its two authors is that name, the other one exported it (the owner)."""
    if len(survey.authors) != 2:
        return None
    peer = identity_key(clean_name(title))[0].casefold()
    keys = [key.casefold() for key in survey.authors]
    if peer not in keys:
        return None
    return keys[1 - keys.index(peer)]
