"""`wirecat start`: migrate, collect static files, print the first login link, then run the
web server, a Celery worker and beat together (honcho reads the Procfile)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from archive.owner.services import login_code_issue, owner_exists


class Command(BaseCommand):
    help = "Prepare the store and run web server + Celery worker + beat in the foreground."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--prepare-only",
            action="store_true",
            help="Migrate and collect static files, then exit.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(f"State folder: {settings.STATE_DIR}")
        self.stdout.write(f"Store:        {settings.DATABASES['default']['NAME']}")
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        if not owner_exists():
            issued = login_code_issue()
            self.stdout.write("")
            self.stdout.write("No owner yet. Open this link within an hour to set your password:")
            self.stdout.write(self.style.SUCCESS(f"  {issued.url}"))
            self.stdout.write("")
        else:
            self.stdout.write(
                f"Sign in at {settings.BASE_URL}/login/ "
                "(forgot the password? `wirecat createowner`)."
            )
        if options["prepare_only"]:
            return
        bin_dir = str(Path(sys.executable).parent)
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
        honcho = shutil.which("honcho")
        if honcho is None:
            raise CommandError("honcho is not installed; run `make run` or `pip install -e .`.")
        procfile = Path(settings.BASE_DIR) / "Procfile"
        sys.stdout.flush()
        # Replace this process, so Ctrl-C and signals reach honcho and its children directly.
        os.execv(  # noqa: S606 - fixed program and arguments, no user input
            honcho, [honcho, "-f", str(procfile), "-d", str(settings.BASE_DIR), "start"]
        )
