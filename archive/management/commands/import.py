"""`wirecat import PATH… [--format F] [--account NAME]`: pour export files into the archive
with a progress bar and a summary. An interrupted import of the same file resumes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from archive.connectors.registry import formats
from archive.imports.models import ImportJob, ImportStatus
from archive.imports.services import import_job_create, import_run
from wirecat.errors import WireCatError


class Command(BaseCommand):
    help = "Import export files (Telegram, Discord, WhatsApp, iMessage, mail, Slack)."

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

    def handle(self, *args: Any, **options: Any) -> None:
        failed = 0
        for path in options["paths"]:
            try:
                job = import_job_create(
                    source=path,
                    format_name=options["format_name"],
                    account_name=options["account"],
                    resume=not options["restart"],
                )
            except WireCatError as exc:
                raise CommandError(str(exc)) from exc
            if job.position:
                self.stdout.write(f"Resuming {job.public_id} after {job.position:,} messages")
            job = self._run(job, options["batch_size"])
            self._summary(job)
            failed += job.status != ImportStatus.DONE
        if failed:
            raise CommandError(f"{failed} of {len(options['paths'])} imports did not finish")

    def _run(self, job: ImportJob, batch_size: int | None) -> ImportJob:
        bar = tqdm(
            desc=f"{job.source_name} ({job.format})",
            unit=" msg",
            unit_scale=(job.total or 0) >= 10_000,
            initial=job.position,
            total=job.total,
            file=self.stderr._out,
            dynamic_ncols=True,
        )
        shown = job.position

        def progress(current: ImportJob) -> None:
            nonlocal shown
            if current.total and bar.total != current.total:
                bar.total = current.total
            bar.update(current.position - shown)
            shown = current.position

        try:
            return import_run(job_id=job.pk, progress=progress, batch_size=batch_size)
        finally:
            bar.close()

    def _summary(self, job: ImportJob) -> None:
        style = self.style.SUCCESS if job.status == ImportStatus.DONE else self.style.ERROR
        self.stdout.write(style(f"{job.public_id} {job.source_name}: {job.get_status_display()}"))
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
