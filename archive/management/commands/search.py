"""`wirecat search "QUERY" [--sort S] [--limit N] [--json] [--meetings | --notes]`: the
page's search, in a shell; `--meetings` searches what was said in meetings instead of
messages, `--notes` the owner's notes. `wirecat search --all [--mode M] [--kinds K,…]
[--like REF] QUERY` searches everything (messages, mail, notes, meetings, conversations,
files) by words, meaning or both, fused by rank."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from archive.search.selectors import MAX_LIMIT, SORTS, MatchedIn, message_search, search_all
from archive.search.services.searches import search_run, search_run_record
from meetings.selectors import MeetingSearchPage, meeting_search
from notes.selectors import NoteSearchPage, note_search
from wirecat.errors import Invalid


class Command(BaseCommand):
    help = "Search the archive's messages with the query language."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "query",
            nargs="?",
            default=None,
            help="e.g. 'invoice from:ann after:2024-01-01 -\"draft\"' (with --all --like: may be"
            " left out)",
        )
        parser.add_argument("--sort", choices=SORTS, help="relevance (the default) or a date order")
        parser.add_argument("--limit", type=int, default=20, help=f"at most {MAX_LIMIT}")
        parser.add_argument("--cursor", help="the cursor a previous page printed")
        parser.add_argument("--json", action="store_true", help="print the hits as JSON lines")
        kinds = parser.add_mutually_exclusive_group()
        kinds.add_argument(
            "--meetings", action="store_true", help="search transcripts and meetings instead"
        )
        kinds.add_argument("--notes", action="store_true", help="search the notes instead")
        kinds.add_argument(
            "--all",
            action="store_true",
            help="search everything: messages, mail, notes, meetings, conversations, files",
        )
        parser.add_argument(
            "--mode", help="with --all: words, meaning, or both fused (hybrid, the default)"
        )
        parser.add_argument(
            "--kinds", help="with --all: the kinds to search, e.g. message,note (all by default)"
        )
        parser.add_argument(
            "--like",
            metavar="REF",
            help="with --all: things like this one (message:msg_…, note:note_…, meeting:mtg_…,"
            " conversation:cnv_…), by meaning",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["all"]:
            given = [f"--{name}" for name in ("mode", "kinds", "like") if options[name] is not None]
            if given:
                raise CommandError(f"{', '.join(given)}: only with --all")
        elif options["sort"] is not None:
            raise CommandError("--sort: search all orders by fused rank; leave --sort out")
        if options["query"] is None and not (options["all"] and options["like"]):
            raise CommandError("give a query (or --all --like REF)")
        query: str = options["query"] or ""
        options["sort"] = options["sort"] or "relevance"
        try:
            if options["all"]:
                self._all(
                    search_all(
                        query=query,
                        mode=options["mode"] or "hybrid",
                        kinds=options["kinds"],
                        cursor=options["cursor"],
                        limit=options["limit"],
                        like=options["like"],
                    ),
                    as_json=options["json"],
                )
                return
            if options["meetings"]:
                self._meetings(
                    meeting_search(query=query, cursor=options["cursor"], limit=options["limit"]),
                    as_json=options["json"],
                )
                return
            if options["notes"]:
                self._notes(
                    note_search(query=query, cursor=options["cursor"], limit=options["limit"]),
                    as_json=options["json"],
                )
                return
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
                            "matched_in": _matched_in_json(hit.matched_in),
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
            found = hit.matched_in
            if found is not None:
                on_page = f", page {found.page}" if found.page else ""
                text = "".join(
                    self.style.WARNING(part.text) if part.hit else part.text
                    for part in found.snippet
                )
                self.stdout.write(f"    in {found.file_name}{on_page}: {' '.join(text.split())}")
        if not options["json"]:
            if page.suggestion:
                self.stdout.write(f"Did you mean: {page.suggestion}")
            if not page.hits:
                self.stdout.write("No messages match." if page.parsed else "Give a query.")
            elif page.next_cursor:
                self.stdout.write(f"More: --cursor {page.next_cursor}")
        if run is not None:  # once the answer is printed, as the page and the API do
            search_run_record(run=run)

    def _meetings(self, page: MeetingSearchPage, *, as_json: bool) -> None:
        for hit in page.hits:
            meeting, segment = hit.meeting, hit.segment
            at = segment.start_ms // 1000 if segment is not None else None
            if as_json:
                found: dict[str, object] = {"meeting": meeting.public_id, "title": meeting.title}
                found |= {"start": meeting.start.isoformat(), "score": hit.score}
                if segment is not None:
                    found |= {"seq": segment.seq, "speaker": segment.speaker}
                    found |= {"start_ms": segment.start_ms, "text": segment.text}
                self.stdout.write(json.dumps(found, ensure_ascii=False))
                continue
            marked = "".join(
                self.style.WARNING(part.text) if part.hit else part.text for part in hit.snippet
            )
            said = ""
            if at is not None:
                said = f" at {at // 3600:02d}:{at // 60 % 60:02d}:{at % 60:02d}"
                said += f", {segment.speaker or 'someone'}" if segment is not None else ""
            self.stdout.write(
                f"{meeting.start:%Y-%m-%d %H:%M}  {meeting.title or 'Untitled'}{said}"
                f"  {meeting.public_id}\n    {' '.join(marked.split())}"
            )
        if not as_json:
            if not page.hits:
                self.stdout.write(
                    "Nothing said in meetings matches." if page.parsed else "Give a query."
                )
            elif page.next_cursor:
                self.stdout.write(f"More: --cursor {page.next_cursor}")

    def _notes(self, page: NoteSearchPage, *, as_json: bool) -> None:
        for hit in page.hits:
            note = hit.note
            if as_json:
                found: dict[str, object] = {"id": note.public_id, "title": note.title}
                found |= {"folder": hit.folder}
                found |= {"updated_at": note.updated_at.isoformat(), "score": hit.score}
                found |= {"snippet": "".join(part.text for part in hit.snippet)}
                self.stdout.write(json.dumps(found, ensure_ascii=False))
                continue
            marked = "".join(
                self.style.WARNING(part.text) if part.hit else part.text for part in hit.snippet
            )
            where = f"  in {hit.folder}" if hit.folder else ""
            self.stdout.write(
                f"{note.updated_at:%Y-%m-%d %H:%M}  {note.title}{where}  {note.public_id}\n"
                f"    {' '.join(marked.split())}"
            )
        if not as_json:
            if page.suggestion:
                self.stdout.write(f"Did you mean: {page.suggestion}")
            if not page.hits:
                self.stdout.write("No notes match." if page.parsed else "Give a query.")
            elif page.next_cursor:
                self.stdout.write(f"More: --cursor {page.next_cursor}")

    def _all(self, page: Any, *, as_json: bool) -> None:
        """Search all's page (archive.search.everything.AllPage): each thing, then the
        counts per kind and the kinds skipped, with why."""
        for item in page.items:
            why = "+".join(side for side in ("words", "meaning") if side in item.why)
            text = " ".join("".join(part.text for part in item.snippet).split())
            if as_json:
                found: dict[str, object] = {"kind": item.kind, "ref": item.ref}
                found |= {"title": item.title, "why": why.split("+"), "snippet": text}
                found |= {"when": item.when.isoformat() if item.when else None}
                found |= {"score": item.score, "at_ms": item.at_ms}
                self.stdout.write(json.dumps(found, ensure_ascii=False))
                continue
            self.stdout.write(f"{item.kind:<12} {why:<13} {item.title}  {item.ref}\n    {text}")
        if as_json:
            return
        if not page.items:
            self.stdout.write(
                "Nothing matches." if page.query.strip() or page.like else "Give a query."
            )
        elif page.next_cursor:
            self.stdout.write(f"More: --cursor {page.next_cursor}")
        counts = ", ".join(
            f"{kind} {page.counts.get(kind, 0)}{'+' if page.capped.get(kind) else ''}"
            for kind in page.kinds
        )
        self.stdout.write(f"Found ({page.mode}): {counts}")
        for key, reason in page.skipped.items():
            self.stdout.write(f"Skipped {key}: {reason}")
        if page.stale:
            self.stdout.write(f"Left out {page.stale} meaning hits whose source changed since.")


def _matched_in_json(found: MatchedIn | None) -> dict[str, object] | None:
    """The file a hit matched in, as the API's `matched_in` has it (the snippet as text)."""
    if found is None:
        return None
    return {
        "attachment": found.attachment,
        "file_name": found.file_name,
        "page": found.page,
        "snippet": "".join(part.text for part in found.snippet),
    }
