"""`wirecat embeddings refresh [--chat TITLE_OR_ID] [--most N] [--seconds S]` cuts what is
due and embeds the chunks that wait (one bounded `embeddings_refresh`), with progress on a
terminal; `wirecat embeddings status` prints how ready the meaning index is, per kind."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from archive.conversations.selectors import chat_find
from archive.meaning.selectors import readiness
from archive.meaning.services.refresh import embeddings_refresh
from wirecat.errors import WireCatError

MOST_DEFAULT = 2_000
MOST_MAX = 10_000_000


def _most(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MOST_MAX:
        raise CommandError(f"--most {text!r}: a whole number of chunks, 1 to {MOST_MAX:,}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value <= 86_400:  # also refuses nan
        raise CommandError(f"--seconds {text!r}: a number of seconds above 0, at most 86400")
    return value


class Command(BaseCommand):
    help = "Bring the meaning index up to date, or say how ready it is."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="refresh|status")
        refresh = actions.add_parser(
            "refresh", help="cut what is due and embed what waits (bounded by --most, --seconds)"
        )
        refresh.add_argument("--chat", help="only this chat's conversations (its id or title)")
        refresh.add_argument(
            "--most", default=str(MOST_DEFAULT), help=f"chunks to embed at most ({MOST_DEFAULT:,})"
        )
        refresh.add_argument("--seconds", help="stop after about this long")
        actions.add_parser("status", help="print the meaning index's readiness per kind")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["action"] == "status":
                self._status()
            else:
                self._refresh(options)
        except WireCatError as error:  # an unknown model setting, its package missing
            raise CommandError(str(error)) from error

    def _refresh(self, options: dict[str, Any]) -> None:
        most = _most(options["most"])
        seconds = _seconds(options["seconds"]) if options.get("seconds") is not None else None
        chat = None
        if options.get("chat"):
            chat = chat_find(options["chat"])
            if chat is None:
                raise CommandError(f"--chat {options['chat']!r}: no chat has this id or title")
        bar = tqdm(
            desc="embedding",
            unit=" chunks",
            file=self.stderr._out,
            dynamic_ncols=True,
            disable=not self.stderr.isatty(),
        )

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        try:
            run = embeddings_refresh(
                most_chunks=most,
                most_sources=max(most, 500),
                seconds=seconds,
                chat=chat.pk if chat is not None else None,
                progress=progress,
            )
        finally:
            bar.close()
        self.stdout.write(f"{run.summary()} in {run.seconds:.1f}s")
        if run.more:
            self.stdout.write("Run it again to go on (the worker's job also does).")

    def _status(self) -> None:
        found = readiness()
        self.stdout.write(
            f"model {found.model}: {found.embedded:,} of {found.chunks:,} chunks embedded"
            f" ({found.percent}%), {found.sources_due:,} sources to cut"
            f" — {'ready' if found.ready else 'not ready'}"
        )
        for name, kind in found.kinds.items():
            self.stdout.write(
                f"  {name:<13} {kind.embedded:>8,} of {kind.chunks:>8,} embedded,"
                f" {kind.waiting:,} waiting, {kind.sources_due:,} due"
                f"  {'ready' if kind.ready else 'not ready'}"
            )
