"""`wirecat backup [DEST] [--with-keys]`: a consistent snapshot of the live store, the blobs
it names and, only when asked, the keys, in one archive file in DEST (default
`<state>/backups/`), with progress on a terminal. Safe while the server, the worker and
imports run: they go on writing meanwhile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from archive.backups.services.backup import BackupFailed, backup_make


class Command(BaseCommand):
    help = "Back up the store, its blobs and (with --with-keys) its keys into one archive file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "dest", nargs="?", help="folder for the archive (default: <state>/backups/)"
        )
        parser.add_argument(
            "--with-keys",
            action="store_true",
            help="include the keys (sealed credentials, sessions): keep such a file as a secret",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        dest = Path(options["dest"]).expanduser().absolute() if options.get("dest") else None
        bar = tqdm(
            unit="B",
            unit_scale=True,
            file=self.stderr._out,
            dynamic_ncols=True,
            disable=not self.stderr.isatty(),
        )
        phase = [""]

        def progress(name: str, done: int, total: int) -> None:
            if name != phase[0]:
                phase[0] = name
                bar.reset(total=total)
                bar.set_description(name)
                bar.unit, bar.unit_scale = ("pages", False) if name == "snapshot" else ("B", True)
            bar.total = total
            bar.update(done - bar.n)

        try:
            made = backup_make(dest, with_keys=options["with_keys"], progress=progress)
        except BackupFailed as failed:
            raise CommandError(str(failed)) from failed
        finally:
            bar.close()
        counts = ", ".join(f"{value:,} {name}" for name, value in made.counts.items())
        self.stdout.write(f"Backed up to {made.path} ({made.size:,} bytes): {counts}")
        if made.missing_blobs:
            self.stdout.write(
                f"{made.missing_blobs:,} blobs named by attachments were not on disk"
                " (listed in the archive's manifest.json)"
            )
        if options["with_keys"]:
            self.stdout.write("It holds the keys: keep it as safe as a password.")
