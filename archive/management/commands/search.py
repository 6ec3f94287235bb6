"""`wirecat search "QUERY" [--sort S] [--limit N] [--json]`: the page's search, in a shell."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from archive.search.selectors import MAX_LIMIT, SORTS, message_search
from archive.search.services.searches import search_run, search_run_record
from wirecat.errors import Invalid


class Command(BaseCommand):
    help = "Search the archive's messages with the query language."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("query", help="e.g. 'invoice from:ann after:2024-01-01 -\"draft\"'")
        parser.add_argument("--sort", choices=SORTS, default="relevance")
        parser.add_argument("--limit", type=int, default=20, help=f"at most {MAX_LIMIT}")
        parser.add_argument("--cursor", help="the cursor a previous page printed")
        parser.add_argument("--json", action="store_true", help="print the hits as JSON lines")

    def handle(self, *args: Any, **options: Any) -> None:
        query: str = options["query"]
        try:
            page = message_search(
                query=query, sort=options["sort"], cursor=options["cursor"], limit=options["limit"]
            )
        except Invalid as exc:
            position = getattr(exc, "position", None)
            if isinstance(position, int):  # a syntax error points at where
                problem = getattr(exc, "problem", str(exc))
                raise CommandError(f"{problem}\n  {query}\n  {' ' * position}^") from exc
            raise CommandError(str(exc)) from exc
        run = search_run(query=query, sort=options["sort"], cursor=options["cursor"])
        for hit in page.hits:
            message = hit.message
            if options["json"]:
                self.stdout.write(
                    json.dumps(
                        {
                            "id": message.public_id,
                            "chat": message.chat.title or message.chat.external_id,
                            "source": message.chat.account.provider,
                            "sender": str(message.sender) if message.sender else None,
                            "sent_at": message.sent_at.isoformat(),
                            "text": message.text,
                            "score": hit.score,
                        },
                        ensure_ascii=False,
                    )
                )
                continue
            who = "You" if message.direction == "out" else (message.sender or "unknown")
            where = message.chat.title or message.chat.external_id
            marked = "".join(
                self.style.WARNING(part.text) if part.hit else part.text for part in hit.snippet
            )
            self.stdout.write(
                f"{message.sent_at:%Y-%m-%d %H:%M}  {who} in {where}  {message.public_id}\n"
                f"    {' '.join(marked.split())}"
            )
        if not options["json"]:
            if page.suggestion:
                self.stdout.write(f"Did you mean: {page.suggestion}")
            if not page.hits:
                self.stdout.write("No messages match." if page.parsed else "Give a query.")
            elif page.next_cursor:
                self.stdout.write(f"More: --cursor {page.next_cursor}")
        if run is not None:  # once the answer is printed, as the page and the API do
            search_run_record(run=run)
