"""Keeping the stems index of files' text current (the words index keeps itself, by
triggers).

The triggers of migration 0028 queue every text row written, whose text changed, or
removed (`archive_attachment_stem_queue`, by the attachment's id). `file_stems_drain` stems
them with the messages' analyzer (`archive.search.services.index.search_analyzer`), so a
query means the same thing over messages and files; a changed analyzer clears the stems and
queues every text again, as the messages' index does. The queue's workings are the
messages' own (`archive.search.services.stems_queue`); `FILES` names the files' tables.

Who drains: the files' job (`archive/files/jobs.py`), after each slice of readings and
every few minutes. A search never drains: until then the words index answers for what
waits in the queue.
"""

from __future__ import annotations

from archive.search.services.index import search_analyzer
from archive.search.services.stems_queue import DrainResult as DrainResult
from archive.search.services.stems_queue import StemsQueue, StemsReading

# A file's text may be millions of characters (a book): a few per transaction, not the
# messages' 500, so one slice never holds a large share of the archive in memory.
SLICE = 20

FILES = StemsQueue(
    stems="attachment_stems",
    queue="archive_attachment_stem_queue",
    key="attachment_id",
    state="archive_attachment_search_state",
    requeue=(
        "INSERT OR IGNORE INTO archive_attachment_stem_queue (attachment_id)"
        " SELECT attachment_id FROM archive_attachmenttext",
    ),
    texts=(
        "SELECT t.attachment_id, t.text FROM json_each(%(ids)s) AS q"
        " CROSS JOIN archive_attachmenttext AS t ON t.attachment_id = q.value"
    ),
    documents="archive_attachmenttext",
)


def file_stems_for_search() -> StemsReading:
    """The stems index as it stands, for a search: reads only."""
    return FILES.reading(search_analyzer())


def file_stems_drain(*, budget_seconds: float | None = None, size: int = SLICE) -> DrainResult:
    """Stem the queued texts, a short transaction per slice, until the queue is empty or
    the budget is spent. Call it outside any transaction (after commit)."""
    return FILES.drain(search_analyzer(), budget_seconds=budget_seconds, size=size)
