"""`wirecat import PATH… [--format F] [--account NAME]`: pour export files into the archive
with a progress bar and a summary. An interrupted import of the same file resumes.

Calendars (.ics) and transcripts (.vtt, .srt, a Zoom chat .txt) are imported the same way,
detected from their content; `--meeting` attaches a transcript to the meeting it names,
`--start` says when its recording began (it then joins the meeting it overlaps)."""

from __future__ import annotations

from argparse import ArgumentTypeError
from datetime import datetime
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from tqdm import tqdm

from archive.connectors.registry import MEETING_FORMATS, formats
from archive.exports.services import export_load, is_export
from archive.imports.models import ImportJob, ImportStatus
from archive.imports.selectors import meeting_changes, meeting_summary
from archive.imports.services import import_job_create, import_run_many
from wirecat.errors import WireCatError


class Command(BaseCommand):
    help = (
        "Import export files (Telegram, Discord, WhatsApp, iMessage, mail, Slack), calendars"
        " (.ics) and transcripts (.vtt, .srt, Zoom chat .txt)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", type=Path, help="export files or folders")
        parser.add_argument(
            "--format", dest="format_name", help="skip detection: " + ", ".join(formats())
        )
        parser.add_argument("--account", help="the name of the owner's account these belong to")
        parser.add_argument("--batch-size", type=int, help="messages per transaction")
        parser.add_argument(
            "--restart",
            action="store_true",
            help="start over instead of resuming an interrupted import of the same file",
        )
        parser.add_argument(
            "--meeting", default="", help="attach a transcript to this meeting (mtg_… or its page)"
        )
        parser.add_argument(
            "--start",
            type=_moment,
            help="when a transcript's recording began (2024-05-01T14:00, local time or with"
            " an offset): it joins the meeting it overlaps",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        jobs: list[ImportJob] = []
        for path in options["paths"]:
            if is_export(path):  # a WireCat export (`wirecat export`): the whole archive
                self._wirecat_export(path)
                continue
            try:
                jobs.append(
                    import_job_create(
                        source=path,
                        format_name=options["format_name"],
                        account_name=options["account"],
                        resume=not options["restart"],
                        meeting=options["meeting"],
                        recording_start=options["start"],
                    )
                )
            except WireCatError as exc:
                raise CommandError(str(exc)) from exc
        if not jobs:
            return
        bars = _Bars(self)
        try:
            # One run: each file's reader starts while the one before is written.
            ended = import_run_many(
                job_ids=[job.pk for job in jobs],
                progress=bars.progress,
                batch_size=options["batch_size"],
            )
        finally:
            bars.close()
        for job in ended:
            self._summary(job)
        failed = sum(job.status != ImportStatus.DONE for job in ended)
        if failed:
            raise CommandError(f"{failed} of {len(options['paths'])} imports did not finish")

    def _wirecat_export(self, path: Path) -> None:
        """A WireCat export, checked whole and then written through the sink and each
        app's services (archive/exports/); a fault names the file and line."""
        bar = tqdm(
            desc="checking", unit=" lines", file=self.stderr._out, dynamic_ncols=True, disable=None
        )
        shown, counted = "checking", 0  # the kind on the bar, and its lines counted

        def progress(kind: str, count: int) -> None:
            nonlocal shown, counted
            if kind != shown:
                bar.set_description(kind, refresh=False)
                bar.reset()
                shown, counted = kind, 0
            bar.update(count - counted)
            counted = count

        try:
            done = export_load(path, progress=progress)
        except WireCatError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            bar.close()
        self.stdout.write(self.style.SUCCESS(f"{path}: WireCat export imported"))
        self.stdout.write(
            f"  messages added {done.messages_added:,}, updated {done.messages_updated:,};"
            f" {done.lines['messages']:,} in the export"
        )
        read = ", ".join(f"{kind} {count:,}" for kind, count in done.lines.items() if count)
        self.stdout.write(f"  lines read: {read}")
        for reason, count in sorted(done.skipped.items()):
            if count:
                self.stdout.write(f"  skipped {count:,}: {reason}")

    def _summary(self, job: ImportJob) -> None:
        style = self.style.SUCCESS if job.status == ImportStatus.DONE else self.style.ERROR
        self.stdout.write(style(f"{job.public_id} {job.source_name}: {job.get_status_display()}"))
        if job.format in MEETING_FORMATS:
            self._meeting_summary(job)
            return
        self.stdout.write(
            f"  added {job.added:,}, updated {job.updated:,}, unchanged {job.unchanged:,}, "
            f"deleted {job.tombstoned:,}; {job.chats.count():,} chats"
        )
        if job.estimated:
            self.stdout.write(
                f"  dates estimated {job.estimated:,}: kept, the export gave no usable date"
                " (find them with is:estimated)"
            )
        for reason, count in sorted(job.skipped.items()):
            self.stdout.write(f"  skipped {count:,}: {reason}")
        for error in job.errors:
            self.stdout.write(self.style.ERROR(f"  error: {error}"))
        if job.status == ImportStatus.FAILED:
            self.stdout.write("  Fix the file or run the same command again to resume.")

    def _meeting_summary(self, job: ImportJob) -> None:
        summary = meeting_summary(job)
        if summary:
            self.stdout.write(f"  {summary[0].upper()}{summary[1:]}")
        if job.outcome.get("meeting"):
            where = reverse("meetings:meeting", args=[job.outcome["meeting"]])
            self.stdout.write(f"  The meeting: {where}")
        changes = meeting_changes(job)
        if changes:
            self.stdout.write(f"  {changes}")
        for problem in job.errors:
            style = self.style.ERROR if job.status == ImportStatus.FAILED else self.style.WARNING
            self.stdout.write(
                style(f"  {'error' if job.status == ImportStatus.FAILED else 'problem'}: {problem}")
            )
        if job.status == ImportStatus.FAILED:
            self.stdout.write("  Fix the file and run the same command again.")


def _moment(text: str) -> datetime:
    """A date and time from the command line; without an offset, in the owner's time zone."""
    found = parse_datetime(text.strip())
    if found is None:
        raise ArgumentTypeError(f"not a date and time: {text!r} (write 2024-05-01T14:00)")
    if timezone.is_naive(found):
        found = timezone.make_aware(found)
    return found


class _Bars:
    """A progress bar per file of the run, each shown while its file is imported."""

    def __init__(self, command: BaseCommand) -> None:
        self.command = command
        self.job_id: int | None = None
        self.bar: tqdm[None] | None = None
        self.shown = 0

    def progress(self, job: ImportJob) -> None:
        if job.format in MEETING_FORMATS or job.outcome:
            return
        if job.pk != self.job_id:
            self.close()
            self.job_id, self.shown = job.pk, job.position
            if job.position and job.status == ImportStatus.RUNNING:
                self.command.stdout.write(
                    f"Resuming {job.public_id} after {job.position:,} messages"
                )
            self.bar = tqdm(
                desc=f"{job.source_name} ({job.format})",
                unit=" msg",
                unit_scale=(job.total or 0) >= 10_000,
                initial=job.position,
                total=job.total,
                file=self.command.stderr._out,
                dynamic_ncols=True,
            )
        assert self.bar is not None
        if job.total and self.bar.total != job.total:
            self.bar.total = job.total
        self.bar.update(job.position - self.shown)
        self.shown = job.position

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
