"""`export_write`: the whole archive into a folder of JSON Lines files with the attachments'
bytes alongside and a manifest (docs/export-format.md); `export_load` (load.py) reads one
back. A folder, not one archive file: each file is written as it streams (no second copy
of a large export while it is packed), read back line by line, and an attachment's bytes
are opened where they lie; `tar` makes one file of it when wanted."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.utils import timezone

from archive.exports import rows
from archive.exports.format import (
    ATTACHMENTS,
    FILES,
    FORMAT,
    MANIFEST,
    VERSION,
    file_name,
    time_text,
    wirecat_version,
)
from archive.exports.load import (
    Ids,
    LoadDone,
    account_read,
    chat_read,
    chats_write,
    identities_write,
    message_versions,
    messages_write,
    people_line,
    people_write,
)
from archive.exports.load import Progress as LoadProgress
from archive.exports.load_apps import (
    calendar_read,
    calendar_write,
    event_read,
    event_write,
    folder_write,
    link_kind_write,
    link_read,
    link_write,
    note_read,
    note_write,
    project_read,
    project_write,
    projects_archive,
    tag_colours_write,
    tag_read,
    tag_write,
    task_parents_write,
    task_read,
    task_write,
    transcript_read,
    transcript_write,
)
from archive.exports.reader import ExportFolder, Line
from archive.exports.reader import is_export as is_export
from archive.store.blobs import blob_open
from archive.store.models import Message
from archive.store.services.maintenance import fts_bulk_writes
from archive.store.sink import quiet_changes
from notes.services.targets import Resolver
from wirecat.errors import Invalid, NotFound

# Called after each line written: (the file's kind, lines of it written so far).
Progress = Callable[[str, int], None]


@dataclass
class ExportDone:
    folder: Path
    counts: dict[str, int] = field(default_factory=dict)
    attachments: int = 0  # files of bytes written
    missing: int = 0  # attachments whose bytes the store no longer has


def export_total() -> int:
    """The messages an export will write (for a progress bar)."""
    return Message.objects.count()


def _destination(dest: Path) -> Path:
    """`dest` made, when it is new or an empty folder; Invalid otherwise (an export never
    mixes with other files)."""
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise Invalid(f"{dest}: exists and is not an empty folder; name a new one")
    dest.mkdir(parents=True, exist_ok=True)
    (dest / ATTACHMENTS).mkdir()
    return dest


def export_write(dest: Path, *, progress: Progress | None = None) -> ExportDone:
    """Write every kind's lines to `dest` (a new or empty folder), the attachments' bytes
    to `dest/attachments/<sha256>`, and `manifest.json` last: a folder without one is an
    export that did not finish."""
    folder = _destination(dest)
    done = ExportDone(folder=folder)
    started = timezone.now()
    for kind in FILES:
        count = 0
        with (folder / file_name(kind)).open("w", encoding="utf-8", newline="\n") as out:
            for row in rows.ROWS[kind]():
                if kind == "messages":
                    _bytes_copy(folder, row, done)
                out.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
                out.write("\n")
                count += 1
                if progress is not None:
                    progress(kind, count)
        done.counts[kind] = count
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "created_at": time_text(started),
        "wirecat_version": wirecat_version(),
        "counts": done.counts,
        "attachments": done.attachments,
        "attachments_missing": done.missing,
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return done


def _bytes_copy(folder: Path, row: rows.Row, done: ExportDone) -> None:
    """Each attachment's bytes once per content; one the blob store lost is written as
    metadata only (`file` null)."""
    for attachment in row["attachments"]:
        if attachment["file"] is None:
            continue
        target = folder / attachment["file"]
        if target.exists():
            continue
        sha = attachment["sha256"]
        try:
            source = blob_open(f"blobs/{sha[:2]}/{sha[2:4]}/{sha}")
        except (Invalid, NotFound):
            attachment["file"] = None
            done.missing += 1
            continue
        partial = target.with_name(f".{target.name}.partial")
        with source, partial.open("wb") as out:
            shutil.copyfileobj(source, out)
        os.replace(partial, target)
        done.attachments += 1


def export_load(root: Path, *, progress: LoadProgress | None = None) -> LoadDone:
    """Import the export at `root` (a folder `export_write` made): checked whole first, so a
    broken line or a missing file is refused, naming it, before anything is written; then
    written kind by kind through the sink and each app's services, quietly (history, not
    news). Running it again changes nothing."""
    export = ExportFolder(root)
    ids = Ids()
    said = progress or (lambda kind, count: None)
    _check(export, ids, said)
    done = LoadDone()
    colours: dict[str, str] = {}
    parents: list[tuple[str, str]] = []
    archived: list[str] = []
    resolver = Resolver()
    with quiet_changes():
        chats_write(ids)
        done.lines["accounts"], done.lines["chats"] = len(ids.accounts), len(ids.chats)
        identities_write(export, ids, done, said)
        with fts_bulk_writes():  # the indexes merge once the messages are in
            messages_write(export, ids, done, said)
        people_write(export, ids, done, said)
        writers: dict[str, Callable[[Line], None]] = {
            "projects": lambda line: project_write(line, archived),
            "tasks": lambda line: task_write(line, ids, done, parents),
            "folders": folder_write,
            "link_kinds": link_kind_write,
            "notes": lambda line: note_write(line, resolver),
            "calendars": lambda line: calendar_write(line, ids),
            "events": lambda line: event_write(line, ids, done),
            "transcripts": lambda line: transcript_write(line, ids),
            "tags": lambda line: tag_write(line, ids, done, colours),
            "links": lambda line: link_write(line, ids, done),
        }
        for kind, write in writers.items():
            if kind == "folders":
                task_parents_write(parents)
                projects_archive(archived)
            for line in export.lines(kind):
                write(line)
                done.lines[kind] += 1
                said(kind, done.lines[kind])
        tag_colours_write(colours, done)
    return done


# How each file's lines are read and checked before anything is written.
_CHECKS: dict[str, Callable[[Line, Ids], object]] = {
    "accounts": account_read,
    "chats": chat_read,
    "identities": lambda line, ids: _identity_checked(line),
    "people": lambda line, ids: people_line(line),
    "projects": lambda line, ids: project_read(line),
    "tasks": lambda line, ids: task_read(line),
    "folders": lambda line, ids: line.text("path", required=True),
    "link_kinds": lambda line, ids: line.text("name", required=True),
    "notes": lambda line, ids: note_read(line),
    "calendars": calendar_read,
    "events": event_read,
    "transcripts": lambda line, ids: transcript_read(line),
    "tags": lambda line, ids: tag_read(line),
    "links": lambda line, ids: link_read(line),
}


def _identity_checked(line: Line) -> object:
    return line.text("provider", required=True), line.text("external_id", required=True)


def _check(export: ExportFolder, ids: Ids, progress: LoadProgress) -> None:
    """Every line of every file read as the import will read it (and every attachment's
    bytes found), before anything is written: FormatError names the first fault."""
    for kind in FILES:
        for count, line in enumerate(export.lines(kind), start=1):
            if kind == "messages":
                message_versions(line, ids, export)
            else:
                _CHECKS[kind](line, ids)
            if count % 10_000 == 0:
                progress(f"checking {kind}", count)
