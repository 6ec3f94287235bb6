"""A long, lifelike chat for the chat page's browser tests: a few people writing in runs,
short and long messages, replies, the owner's own, over many days."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from archive.store.domain import AccountRecord, Batch, ChatRecord, IdentityRecord, MessageRecord
from archive.store.models import Chat
from archive.store.sink import batch_record

PEOPLE = [("ada", "Ada Lovelace"), ("bram", "Bram Stoker"), ("cleo", "Cleo Park"), ("me", "Me")]
LINES = [
    "ok",
    "Sounds good!",
    "Are we still on for Saturday?",
    "I'll bring the map and the snacks, you bring the tickets.",
    "Did anyone see the forecast? Rain until noon, then sun.",
    "haha",
    "On my way, ten minutes.",
    "Here is the plan: meet at the station at 9, train at 9:20, lunch by the lake, and "
    "back before dark. Tell me if that does not work for you.",
    "👍",
    "Can you send me the address again?",
    "The ferry timetable changed last week, so check before you leave.",
    "Thanks!",
]


def long_chat(n: int, *, start: datetime | None = None, title: str = "Weekend Trips") -> Chat:
    """A group chat of `n` messages (about 12 a day), recorded through the sink."""
    rng = random.Random(16)
    when = start or datetime(2017, 1, 2, 8, 0, tzinfo=UTC)
    account = AccountRecord(
        provider="telegram",
        external_id="e2e-account",
        name="Telegram",
        owner=IdentityRecord(external_id="me", display_name="Me"),
    )
    identities = tuple(IdentityRecord(external_id=key, display_name=name) for key, name in PEOPLE)
    chat = ChatRecord(external_id="trips", kind="group", title=title)
    records: list[MessageRecord] = []
    sender = "ada"
    for i in range(n):
        if rng.random() < 0.45:  # a new run: someone else writes
            sender = rng.choice([key for key, _ in PEOPLE if key != sender])
        gap = rng.choice([1, 1, 2, 3, 8, 40, 90]) if i % 12 else 60 * 14
        when += timedelta(minutes=gap)
        records.append(
            MessageRecord(
                chat_external_id="trips",
                external_id=str(i + 1),
                sent_at=when,
                text=f"{rng.choice(LINES)} (#{i + 1})",
                sender_external_id=sender,
                direction="out" if sender == "me" else "in",
                reply_to_external_id=str(i - 2) if i > 3 and i % 9 == 0 else "",
            )
        )
    for at in range(0, n, 1000):
        batch_record(
            batch=Batch(
                account=account,
                chats=(chat,),
                identities=identities,
                messages=tuple(records[at : at + 1000]),
            )
        )
    return Chat.objects.get(external_id="trips")


def message_menu_item(page: Any, public_id: str, item: str) -> Any:
    """Open the actions menu of message `public_id` on the chat page and click `item`."""
    article = page.locator(f"article#{public_id}")
    article.hover()
    article.get_by_label("Actions for this message").click()
    article.get_by_role("link", name=item).click()
    return article
