"""`wirecat notes import DIR` / `wirecat notes export DIR`: the notes as a folder of Markdown
files with YAML front matter (an Obsidian-style vault), with a progress bar on a terminal and
a one-line summary. An import with any problem writes nothing and names each file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from notes.vault import ExportResult, ImportResult, vault_export, vault_import
from wirecat.errors import WireCatError

STAGES = {"read": "checking", "write": "writing"}


class Command(BaseCommand):
    help = "Import or export the notes as a folder of Markdown files (an Obsidian-style vault)."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="import|export")
        reading = actions.add_parser(
            "import",
            help="import a vault: new notes made, changed ones saved as a revision",
        )
        reading.add_argument("dir", type=Path, help="the vault's folder")
        reading.add_argument(
            "--overwrite",
            action="store_true",
            help="a file wins over its note changed in WireCat after the file was exported"
            " (WireCat's text stays in the note's revisions)",
        )
        writing = actions.add_parser(
            "export", help="write every note and folder into an empty folder or an earlier export"
        )
        writing.add_argument("dir", type=Path, help="the folder to write")

    def handle(self, *args: Any, **options: Any) -> None:
        directory: Path = options["dir"]
        bar = tqdm(
            desc=str(directory.name or directory),
            unit=" files",
            file=self.stderr._out,
            dynamic_ncols=True,
            disable=not self.stderr.isatty(),
        )
        stage = ""

        def progress(now: str, done: int, total: int) -> None:
            nonlocal stage
            if now != stage:
                stage = now
                bar.reset(total=total)
                bar.set_description(f"{directory.name or directory} ({STAGES.get(now, now)})")
            bar.update(done - bar.n)

        try:
            if options["action"] == "import":
                found = vault_import(directory, overwrite=options["overwrite"], progress=progress)
            else:
                written = vault_export(directory, progress=progress)
        except WireCatError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            bar.close()
        if options["action"] == "import":
            self._imported(directory, found)
        else:
            self._exported(directory, written)

    def _imported(self, directory: Path, result: ImportResult) -> None:
        for reason, count in sorted(result.skipped.items()):
            self.stdout.write(f"  skipped {count:,}: {reason}")
        counts = (
            f"notes created {result.created:,}, updated {result.updated:,},"
            f" unchanged {result.unchanged:,}; folders made {result.folders:,}"
        )
        for error in result.errors:
            self.stdout.write(self.style.ERROR(f"  error: {error}"))
        if result.stopped:
            raise CommandError(
                f"{directory}: stopped ({counts}); run the same command again to finish"
            )
        if result.errors:
            raise CommandError(
                f"{directory}: nothing was imported; fix the files named above and run the"
                " same command again"
            )
        self.stdout.write(self.style.SUCCESS(f"{directory}: {counts}"))

    def _exported(self, directory: Path, result: ExportResult) -> None:
        self.stdout.write(
            self.style.SUCCESS(
                f"{directory}: notes {result.notes:,}, folders {result.folders:,}; files"
                f" written {result.written:,}, unchanged {result.unchanged:,},"
                f" removed {result.removed:,}"
            )
        )
