"""`wirecat export DEST`: the whole archive as a folder of JSON Lines files with the
attachments' bytes alongside and a manifest (docs/export-format.md). `wirecat import DEST`
brings it back into an empty store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from archive.exports.services import export_total, export_write
from wirecat.errors import WireCatError


class Command(BaseCommand):
    help = "Export the whole archive as JSON Lines with its attachments (a new folder)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dest", type=Path, help="a new (or empty) folder to write")

    def handle(self, *args: Any, **options: Any) -> None:
        bar = tqdm(
            desc="messages",
            unit=" msg",
            total=export_total(),
            file=self.stderr._out,
            dynamic_ncols=True,
            disable=None,  # drawn on a terminal only
        )

        shown = "messages"

        def progress(kind: str, count: int) -> None:
            nonlocal shown
            if kind == "messages":
                bar.update(1)
            elif kind != shown:
                shown = kind
                bar.set_description(kind, refresh=False)

        try:
            done = export_write(options["dest"], progress=progress)
        except WireCatError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            bar.close()
        counts = ", ".join(f"{kind} {count:,}" for kind, count in done.counts.items() if count)
        self.stdout.write(self.style.SUCCESS(f"Exported to {done.folder}"))
        self.stdout.write(f"  {counts or 'nothing: the archive is empty'}")
        self.stdout.write(f"  attachment files {done.attachments:,}")
        if done.missing:
            self.stdout.write(
                self.style.WARNING(f"  {done.missing:,} attachments without bytes in the store")
            )
