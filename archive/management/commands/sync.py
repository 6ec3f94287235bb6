"""`wirecat sync [ID …]`: run live sync now for the named live accounts (their `syn_…` ids)
or, without ids, for every connected account; print each run's outcome."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from archive.sync.models import SyncAccount
from archive.sync.services.accounts import sync_get
from archive.sync.services.run import account_sync
from wirecat.errors import NotFound


class Command(BaseCommand):
    help = "Run live sync now (all connected accounts, or the ones named)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("ids", nargs="*", help="live account ids (syn_…); none: all")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            accounts = (
                [sync_get(public_id) for public_id in options["ids"]]
                if options["ids"]
                else list(SyncAccount.objects.select_related("account"))
            )
        except NotFound as exc:
            raise CommandError(str(exc)) from exc
        if not accounts:
            self.stdout.write("no live accounts are connected (see the Sync page)")
        failed = False
        for sync in accounts:
            run = account_sync(sync_account_id=sync.pk, force=True)
            name = f"{sync.public_id} {sync.account.name}"
            if run is None:
                self.stdout.write(f"{name}: another worker is syncing it")
                continue
            line = (
                f"{name}: {run.outcome}, {run.fetched} fetched, {run.added} added,"
                f" {run.updated} updated"
            )
            if run.error:
                line += f" ({run.error})"
                failed = failed or run.outcome in ("credentials", "error")
            self.stdout.write(line)
        if failed:
            raise CommandError("some accounts could not be synced")
