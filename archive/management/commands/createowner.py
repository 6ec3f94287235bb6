"""`wirecat createowner`: print a one-time link that lets the owner set a password."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from archive.owner.services import login_code_issue, owner_exists


class Command(BaseCommand):
    help = "Print a one-time login link (valid for an hour) to set the owner's password."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--base-url", help="Address the browser will use (default WIRECAT_BASE_URL)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        issued = login_code_issue(base_url=options.get("base_url"))
        verb = "reset the owner's password" if owner_exists() else "create the owner"
        self.stdout.write(f"Open this link within an hour to {verb} (it works once):")
        self.stdout.write(self.style.SUCCESS(f"  {issued.url}"))
