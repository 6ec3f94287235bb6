"""`wirecat restore SRC [--state DIR]`: a backup made by `wirecat backup` into an empty
state folder (default: this WireCat's, WIRECAT_STATE_DIR). Every part is checked against
the manifest, and the store by SQLite's integrity checks, before anything becomes final;
a folder that holds a store is never overwritten."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from archive.backups.services.restore import backup_restore
from wirecat.errors import WireCatError


class Command(BaseCommand):
    help = "Restore a backup archive into an empty state folder, checking it first."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("src", help="the archive file (wirecat-backup-….tar.gz)")
        parser.add_argument(
            "--state", help="the state folder to restore into (default: WIRECAT_STATE_DIR's)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        src = Path(options["src"]).expanduser().absolute()
        state = Path(options["state"]) if options.get("state") else Path(settings.STATE_DIR)
        bar = tqdm(
            unit="B",
            unit_scale=True,
            desc="reading",
            file=self.stderr._out,
            dynamic_ncols=True,
            disable=not self.stderr.isatty(),
        )

        def progress(name: str, done: int, total: int) -> None:
            if name == "reading":
                bar.total = total
                bar.update(done - bar.n)
            else:
                bar.set_description(name)

        try:
            restored = backup_restore(src, state, progress=progress)
        except WireCatError as error:
            raise CommandError(f"restore refused: {error}") from error
        finally:
            bar.close()
        counts = ", ".join(f"{value:,} {name}" for name, value in restored.counts.items())
        made = restored.manifest.get("created_at", "?")
        self.stdout.write(f"Restored the backup of {made} into {restored.state}: {counts}")
        self.stdout.write("Checked: every part's SHA-256, integrity_check, full-text indexes.")
        if not restored.manifest.get("with_keys"):
            self.stdout.write(
                "The backup holds no keys: live accounts' sealed credentials need their"
                " credentials.key copied into the state folder, or the accounts set up again."
            )
        self.stdout.write("Run `wirecat migrate` if this WireCat is newer than the backup's.")
