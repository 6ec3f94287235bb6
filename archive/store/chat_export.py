"""One chat as a zip to read anywhere: `<chat title>.html` (one self-contained page) and
a `media/` folder with the bytes of its stored attachments.

The zip is written as it is sent: the chat's messages are read a batch at a time in time
order (the page is drawn one batch after another by the caller, which owns the HTML), the
zip goes to a spool the response drains after every few writes, and the media follow the
page, each blob copied in blocks. Memory stays bounded whatever the chat's length: one
batch of messages, and the names of its media files (one short string per file).

Names in the zip never come from provider data as paths: a file name is cut to its base
name, stripped of what Windows, macOS or a shell would trip on, kept short, and made
unique (case-insensitively) within `media/`. The same bytes attached twice (a sticker) are
one file.
"""

from __future__ import annotations

import mimetypes
import re
import unicodedata
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import BinaryIO

from django.db.models import Count, Max, Min, Prefetch, QuerySet
from django.utils import timezone
from django.utils.formats import date_format

from archive.store.blobs import CHUNK, blob_open
from archive.store.models import Attachment, Chat, DeliveryStatus, Message, MessageRevision
from archive.store.selectors import NOT_IN_CHAT, MessageRow, message_rows
from wirecat.errors import Invalid, NotFound

EXPORT_BATCH = 500  # messages read, drawn and written at a time
SPOOL_FLUSH = 1 << 16  # bytes the spool gathers before the response takes them
NAME_BYTES = 120  # a media file's name at most, in UTF-8 (file systems allow 255)
# An HTML page this long needs ZIP64 (more than 4 GiB): only a chat of millions of messages.
ZIP64_MESSAGES = 2_000_000

# Drafts never sent are not part of the chat (as on the chat page): refused, failed, and
# those still waiting for the owner.
NOT_EXPORTED = (*NOT_IN_CHAT, DeliveryStatus.AWAITING)

_UNSAFE = re.compile(r'[\x00-\x1f\x7f<>:"/\\|?*]')
_RESERVED = re.compile(r"^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$", re.IGNORECASE)


def safe_name(raw: str, *, fallback: str) -> str:
    """A file name that is only a name: the base name of `raw` (a provider's, untrusted),
    without control or reserved characters, no leading dots or trailing dots and spaces,
    not a Windows device name, at most NAME_BYTES long (the extension kept); `fallback`
    when nothing is left."""
    base = unicodedata.normalize("NFC", str(raw)).replace("\\", "/").rsplit("/", 1)[-1]
    base = _UNSAFE.sub("_", " ".join(base.split())).strip(". ") or fallback
    if _RESERVED.match(base):
        base = f"_{base}"
    return _shortened(base, NAME_BYTES)


def _shortened(name: str, limit: int) -> str:
    if len(name.encode()) <= limit:
        return name
    stem, dot, extension = name.rpartition(".")
    if not dot or not 0 < len(extension.encode()) <= 16:
        stem, extension = name, ""
    keep = limit - len(extension.encode()) - (1 if extension else 0)
    cut = stem.encode()[:keep].decode(errors="ignore").rstrip(". ") or "file"
    return f"{cut}.{extension}" if extension else cut


def export_title(chat: Chat) -> str:
    """The chat's title as a file name (the page's name in the zip, the zip's own): a
    slash in a title is no folder."""
    title = (chat.title or chat.external_id).replace("/", "_").replace("\\", "_")
    return safe_name(title, fallback="chat")


@dataclass
class MediaFolder:
    """The files of `media/`: each stored blob once, under a name unique within the
    folder whatever the case (as on a case-insensitive disk)."""

    files: list[tuple[str, str]] = field(default_factory=list)  # (name, blob path)
    _taken: set[str] = field(default_factory=set)
    _by_blob: dict[str, str] = field(default_factory=dict)
    _counted: dict[str, int] = field(default_factory=dict)

    def add(self, attachment: Attachment, *, fallback: str) -> str | None:
        """The name `attachment`'s bytes have in `media/`, or None when they are not
        stored (never were, swept, or gone from disk)."""
        path = attachment.path
        if not path:
            return None
        if path in self._by_blob:
            return self._by_blob[path]
        if not _on_disk(path):
            return None
        name = self._unique(safe_name(attachment.file_name, fallback=fallback))
        self._by_blob[path] = name
        self.files.append((name, path))
        return name

    def _unique(self, name: str) -> str:
        stem, dot, extension = name.rpartition(".")
        if not stem:  # no extension (or only one: ".bashrc" was stripped already)
            stem, dot, extension = name, "", ""
        # Where counting last stopped for this name: a thousand unnamed photos are
        # "photo.jpg" to "photo (1000).jpg", never a thousand tries each.
        candidate, n = name, self._counted.get(name.casefold(), 1)
        while candidate.casefold() in self._taken:
            n += 1
            candidate = _shortened(f"{stem} ({n}){dot}{extension}", NAME_BYTES)
        self._counted[name.casefold()] = n
        self._taken.add(candidate.casefold())
        return candidate


def _on_disk(path: str) -> bool:
    try:
        blob_open(path).close()
    except (Invalid, NotFound):
        return False
    return True


def _fallback(attachment: Attachment) -> str:
    """A name for an attachment the provider gave none: its kind and its type's extension."""
    mime = (attachment.mime_type or "").split(";")[0].strip().lower()
    kind = mime.split("/")[0] if mime else ""
    stem = {"image": "photo", "video": "video", "audio": "audio"}.get(kind, "file")
    extension = mimetypes.guess_extension(mime) if mime else None
    return f"{stem}{extension or ''}"


# --- the chat's messages, a batch at a time ---------------------------------------------------


@dataclass(frozen=True)
class ExportSummary:
    """What the page's header says: how many messages, from when to when."""

    count: int
    first: datetime | None
    last: datetime | None


@dataclass(frozen=True)
class ExportBatch:
    """Messages as the chat page lays them out (day separators with their full dates,
    runs), each attachment's name in `media/` by its id (absent: not stored), the earlier
    texts of the edited ones by message id (oldest first)."""

    rows: list[MessageRow]
    media: Mapping[int, str]
    revisions: Mapping[int, list[MessageRevision]]


def _exported(chat: Chat) -> QuerySet[Message]:
    return Message.objects.filter(chat=chat).exclude(delivery_status__in=NOT_EXPORTED)


def export_summary(*, chat: Chat) -> ExportSummary:
    found = _exported(chat).aggregate(count=Count("id"), first=Min("sent_at"), last=Max("sent_at"))
    return ExportSummary(count=found["count"], first=found["first"], last=found["last"])


def export_batches(
    *, chat: Chat, media: MediaFolder, size: int = EXPORT_BATCH
) -> Iterator[ExportBatch]:
    """Every message of `chat` in time order, deleted ones too (the page marks them),
    `size` at a time by a cursor over (sent_at, id): never the whole chat in memory."""
    attachments = Attachment.objects.order_by("id")
    qs = (
        _exported(chat)
        .select_related("sender", "reply_to", "reply_to__sender")
        .prefetch_related(Prefetch("attachments", queryset=attachments))
        .order_by("sent_at", "id")
    )
    previous: Message | None = None
    while True:
        page = qs
        if previous is not None:
            # After the previous batch's last message: a range on the (chat, sent_at) index
            # (an OR of the two conditions would walk the chat from its start every time).
            page = qs.filter(sent_at__gte=previous.sent_at).exclude(
                sent_at=previous.sent_at, id__lte=previous.pk
            )
        messages = list(page[:size])
        if not messages:
            return
        # The last message of the batch before goes first, so days and runs continue
        # across the seam; its row was drawn with that batch.
        rows = message_rows([previous, *messages] if previous else messages)
        rows = rows[1:] if previous else rows
        names: dict[int, str] = {}
        for message in messages:
            for attachment in message.attachments.all():
                name = media.add(attachment, fallback=_fallback(attachment))
                if name is not None:
                    names[attachment.pk] = name
        yield ExportBatch(
            rows=[_dated(row) for row in rows], media=names, revisions=_revisions(messages)
        )
        previous = messages[-1]


def _revisions(messages: list[Message]) -> dict[int, list[MessageRevision]]:
    """The earlier texts of the edited messages among `messages`, in one query."""
    edited = [m.pk for m in messages if m.edited_at]
    found: dict[int, list[MessageRevision]] = {}
    if edited:
        for revision in MessageRevision.objects.filter(message_id__in=edited).order_by(
            "recorded_at", "id"
        ):
            found.setdefault(revision.message_id, []).append(revision)
    return found


def _dated(row: MessageRow) -> MessageRow:
    """A day separator with its date ("1 March 2024"), never "Today": an export is read
    on other days."""
    return replace(row, day_label=date_format(row.day, "j F Y")) if row.day_label else row


# --- the zip, as it is sent ------------------------------------------------------------------


class _Spool:
    """Where the zip writes: held until the response takes it. It cannot seek, so the
    zip writes each entry's sizes after its bytes (a data descriptor)."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self.size = 0

    def write(self, data: bytes, /) -> int:
        self._parts.append(bytes(data))
        self.size += len(data)
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def take(self) -> bytes:
        out = b"".join(self._parts)
        self._parts.clear()
        self.size = 0
        return out


def _entry(name: str, *, compress: int, size: int = 0) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=timezone.localtime().timetuple()[:6])
    info.compress_type = compress
    info.external_attr = 0o644 << 16
    info.file_size = size
    return info


HtmlWriter = Callable[[Iterator[ExportBatch], ExportSummary], Iterable[str]]


def chat_zip(*, chat: Chat, html: HtmlWriter) -> Iterator[bytes]:
    """The zip of `chat`, in pieces as they are written: first the page (`html` draws it
    from the batches of messages and the summary, piece by piece), then its media.

    Media are stored as they are (pictures and videos are compressed already); the page is
    deflated. A blob swept between the page and its copy is left out (its link dangles)."""
    spool = _Spool()
    media = MediaFolder()
    summary = export_summary(chat=chat)
    with zipfile.ZipFile(spool, "w") as archive:
        page = _entry(f"{export_title(chat)}.html", compress=zipfile.ZIP_DEFLATED)
        with archive.open(page, "w", force_zip64=summary.count > ZIP64_MESSAGES) as out:
            for piece in html(export_batches(chat=chat, media=media), summary):
                out.write(piece.encode())
                if spool.size >= SPOOL_FLUSH:
                    yield spool.take()
        for name, path in media.files:
            try:
                source = blob_open(path)
            except (Invalid, NotFound):
                continue
            yield from _copy(archive, spool, source, f"media/{name}")
    yield spool.take()


def _copy(archive: zipfile.ZipFile, spool: _Spool, source: BinaryIO, name: str) -> Iterator[bytes]:
    with source:
        size = source.seek(0, 2)
        source.seek(0)
        with archive.open(_entry(name, compress=zipfile.ZIP_STORED, size=size), "w") as out:
            while block := source.read(CHUNK):
                out.write(block)
                yield spool.take()
