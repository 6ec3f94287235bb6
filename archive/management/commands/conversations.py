"""`wirecat conversations build [--chat TITLE_OR_ID] [--full]` builds the conversations of
one chat, or of every chat that needs it, with progress on a terminal;
`wirecat conversations links --chat TITLE_OR_ID` prints each message's chosen parent, one
`MESSAGE<TAB>PARENT` line per message in the chat's order (provider ids; a message that
starts a conversation names itself)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from archive.conversations.selectors import chat_find, chat_links, current_build_id
from archive.conversations.services.builds import (
    builder_lock,
    conversations_build,
    conversations_build_due,
)
from archive.conversations.services.writer import BuildRun
from archive.store.models import Chat
from wirecat.errors import WireCatError


class Command(BaseCommand):
    help = "Build chats' conversations, or print a chat's reply links."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="build|links")
        build = actions.add_parser(
            "build", help="build one chat's conversations, or every chat that needs it"
        )
        build.add_argument("--chat", help="the chat's id or exact title")
        build.add_argument(
            "--full", action="store_true", help="rebuild even a chat that is up to date"
        )
        links = actions.add_parser(
            "links", help="print MESSAGE<TAB>PARENT for every message of a chat, in order"
        )
        links.add_argument("--chat", required=True, help="the chat's id or exact title")

    def _chat(self, text: str) -> Chat:
        chat = chat_find(text)
        if chat is None:
            raise CommandError(f"--chat {text!r}: no chat has this id or title")
        return chat

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "links":
            self._links(self._chat(options["chat"]))
            return
        chat = self._chat(options["chat"]) if options.get("chat") else None
        with builder_lock(wait=True):
            if chat is not None:
                run = self._one(chat, full=options["full"])
                self._report(chat, run)
            else:
                self._due()

    def _bar(self, label: str) -> tqdm:
        return tqdm(
            desc=label,
            unit=" messages",
            file=self.stderr._out,
            dynamic_ncols=True,
            disable=not self.stderr.isatty(),
        )

    def _one(self, chat: Chat, *, full: bool) -> BuildRun:
        bar = self._bar(str(chat)[:40])

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        try:
            return conversations_build(chat_id=chat.pk, full=full, progress=progress)
        finally:
            bar.close()

    def _report(self, chat: Chat, run: BuildRun) -> None:
        if run.mode == "nothing":
            self.stdout.write(f"{chat}: up to date")
            return
        sources = ", ".join(f"{n} {s}" for s, n in sorted(run.sources.items())) or "none"
        self.stdout.write(
            f"{chat}: {run.messages} messages ({sources}) in {run.conversations} new"
            f" conversations, {run.mode} build in {run.seconds:.1f}s"
            f" ({run.transactions} transactions, longest {run.longest_write * 1000:.0f} ms)"
        )

    def _due(self) -> None:
        bars: dict[int, tqdm] = {}

        def progress(chat_id: int, done: int, total: int) -> None:
            bar = bars.get(chat_id)
            if bar is None:
                for old in bars.values():
                    old.close()
                bars.clear()
                bar = bars[chat_id] = self._bar(str(Chat.objects.get(pk=chat_id))[:40])
            bar.total = total
            bar.update(done - bar.n)

        run = conversations_build_due(chat_progress=progress)
        for bar in bars.values():
            bar.close()
        chats = {c.pk: c for c in Chat.objects.filter(pk__in=[b.chat_id for b in run.built])}
        for built in run.built:
            self._report(chats[built.chat_id], built)
        for chat_id, reason in run.failed.items():
            self.stderr.write(f"chat {chat_id}: the build failed: {reason}")
        if not run.built and not run.failed:
            self.stdout.write("every chat's conversations are up to date")

    def _links(self, chat: Chat) -> None:
        if current_build_id(chat.pk) is None:
            raise CommandError(
                f"{chat}: its conversations are not built yet"
                f" (wirecat conversations build --chat {chat.pk})"
            )
        write = self.stdout.write
        try:
            for message, parent in chat_links(chat.pk):
                write(f"{message}\t{parent}")
        except WireCatError as error:
            raise CommandError(f"{chat}: {error}") from error
