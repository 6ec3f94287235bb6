"""Conversations in search: `conv:` narrows to one, hits carry theirs (API and page),
the page groups hits by conversation, and a message's context can be its conversation."""

from __future__ import annotations

from typing import Any

import pytest

from archive.conversations.selectors import (
    ConversationView,
    conversation_message_ids,
    conversations_of,
)
from archive.conversations.services.builds import conversations_build
from archive.search.parser import QuerySyntaxError, parse, to_json
from archive.search.selectors import message_search
from archive.store.models import Chat, Message
from archive.store.sink import batch_record
from meetings.search import meeting_search
from notes.search import note_search
from tests.factories import batch, message
from wirecat.errors import Invalid

pytestmark = pytest.mark.django_db(transaction=True)

TWO_DAYS = 2 * 24 * 60


@pytest.fixture
def built() -> dict[str, Message]:
    """Two threads in chat-1 (the messenger's replies tie each together), two days apart,
    and a message about the same thing in chat-2; both chats built."""
    batch_record(
        batch=batch(
            message("1", "anyone know how to mount a usb disk?", minutes=0),
            message(
                "2",
                "try sudo mount /dev/sdb1 /mnt",
                sender="bob",
                minutes=1,
                reply_to_external_id="1",
            ),
            message("3", "thanks bob, the disk mounts now", minutes=2, reply_to_external_id="2"),
            message("4", "the disk backup finished overnight", sender="bob", minutes=TWO_DAYS),
            message(
                "5",
                "great, where is the backup disk kept",
                minutes=TWO_DAYS + 1,
                reply_to_external_id="4",
            ),
            message("6", "my disk is full again", chat="chat-2", minutes=5),
        )
    )
    for chat in Chat.objects.all():
        conversations_build(chat_id=chat.pk)
    return {m.external_id: m for m in Message.objects.all()}


def conversation(found: dict[str, Message], external_id: str) -> ConversationView:
    return conversations_of([found[external_id].pk])[found[external_id].pk]


def ids(query: str, **options: Any) -> set[str]:
    page = message_search(query=query, limit=100, **options)
    return {hit.message.external_id for hit in page.hits}


def test_conv_parses_as_a_field_and_refuses_a_malformed_id() -> None:
    tree = parse("disk conv:cnv_01hzzzzzzzzzzzzzzzzzzzzzzz")
    assert to_json(tree)["operands"][1] == {  # type: ignore[index]
        "operator": "conv",
        "operand": "cnv_01HZZZZZZZZZZZZZZZZZZZZZZZ",
        "negated": False,
    }
    for bad in ("conv:42", "conv:msg_01HZZZZZZZZZZZZZZZZZZZZZZZ", "conv:cnv_short", "conv:cnv_"):
        with pytest.raises(QuerySyntaxError, match="conv: takes a conversation's id"):
            parse(f"disk {bad}")


def test_conv_narrows_to_the_conversation_with_words_and_without(
    built: dict[str, Message],
) -> None:
    first = conversation(built, "1")
    members = {
        m.external_id for m in Message.objects.filter(pk__in=conversation_message_ids(first.id))
    }
    assert {"1", "2", "3"} <= members and "6" not in members
    assert ids(f"conv:{first.public_id}") == members
    assert ids(f"conv:{first.public_id}", sort="newest") == members
    assert ids("disk") == {"1", "3", "4", "5", "6"}
    assert ids(f"disk conv:{first.public_id}") == {"1", "3", "4", "5", "6"} & members
    assert ids(f"disk -conv:{first.public_id}") == {"1", "3", "4", "5", "6"} - members
    # With other fields: a sender, and an OR of two conversations.
    assert ids(f"conv:{first.public_id} from:bob") == {m for m in members if m in ("2", "4")}
    other = conversation(built, "6")
    assert ids(f"disk (conv:{first.public_id} OR conv:{other.public_id})") == (
        {"1", "3", "4", "5"} & members
    ) | {"6"}


def test_an_unknown_or_unbuilt_conversation_is_a_sentence(built: dict[str, Message]) -> None:
    with pytest.raises(Invalid, match="no conversation has this id"):
        message_search(query="disk conv:cnv_01HZZZZZZZZZZZZZZZZZZZZZZZ")
    batch_record(batch=batch(message("7", "a new chat's disk", chat="chat-3")))
    unbuilt = Message.objects.get(external_id="7").public_id.replace("msg_", "cnv_")
    with pytest.raises(Invalid, match="not built yet"):
        message_search(query=f"conv:{unbuilt}")


def test_notes_and_meetings_refuse_conv() -> None:
    query = "disk conv:cnv_01HZZZZZZZZZZZZZZZZZZZZZZZ"
    with pytest.raises(Invalid, match="conv: is for messages"):
        note_search(query=query)
    with pytest.raises(Invalid, match="conv: is for messages"):
        meeting_search(query=query)


def test_hits_carry_their_conversation_in_the_api(
    owner_client: Any, built: dict[str, Message]
) -> None:
    first = conversation(built, "1")
    body = owner_client.get("/api/search/messages", {"q": "disk", "limit": 100}).json()
    by_id = {hit["id"]: hit["conversation"] for hit in body["hits"]}
    assert by_id[built["1"].public_id] == {
        "id": first.public_id,
        "title": first.title,
        "message_count": first.message_count,
    }
    assert by_id[built["6"].public_id]["id"] == conversation(built, "6").public_id
    narrowed = owner_client.get("/api/search/messages", {"q": f"conv:{first.public_id}"})
    assert narrowed.status_code == 200
    assert {h["conversation"]["id"] for h in narrowed.json()["hits"]} == {first.public_id}
    for bad, detail in (
        ("conv:cnv_nope", "conv: takes a conversation's id"),
        ("conv:cnv_01HZZZZZZZZZZZZZZZZZZZZZZZ", "no conversation has this id"),
    ):
        refused = owner_client.get("/api/search/messages", {"q": bad})
        assert refused.status_code == 422
        assert detail in refused.json()["detail"]


def test_a_hit_of_a_chat_not_built_has_no_conversation(owner_client: Any, db: None) -> None:
    batch_record(batch=batch(message("1", "an unbuilt disk")))
    (hit,) = owner_client.get("/api/search/messages", {"q": "disk"}).json()["hits"]
    assert hit["conversation"] is None
    page = owner_client.get("/search/", {"q": "disk"})
    assert page.status_code == 200 and b"hit-conversation" not in page.content


def test_the_page_shows_each_hits_conversation_and_groups_by_it(
    owner_client: Any, built: dict[str, Message]
) -> None:
    first, other = conversation(built, "1"), conversation(built, "6")
    page = owner_client.get("/search/", {"q": "disk", "sort": "oldest"}).content.decode()
    assert page.count('class="hit-conversation"') == 5
    assert "Group by conversation" in page
    grouped = owner_client.get(
        "/search/", {"q": "disk", "sort": "oldest", "group": "conversation"}
    ).content.decode()
    assert 'class="hit-conversation"' not in grouped  # the group's title says it once
    titles = grouped.count('class="hit-group"')
    assert titles == len({conversation(built, n).public_id for n in ("1", "3", "4", "5", "6")})

    # Oldest first: the first message's conversation leads; the other chat's comes after it
    # (its only hit is later than message 1), and message 3 sits under message 1's title.
    def hit_at(external_id: str) -> int:
        return grouped.index(f'class="hit-link" href="/m/{built[external_id].public_id}/"')

    first_at = grouped.index(f"conv:{first.public_id}")
    assert first_at < hit_at("1") < hit_at("3")
    assert first_at < grouped.index(f"conv:{other.public_id}")
    # The toggle and the pager keep the grouping; bad values fall back to the plain list.
    assert 'name="group" value="conversation"' in grouped
    plain = owner_client.get("/search/", {"q": "disk", "group": "<x>"})
    assert plain.status_code == 200 and b'class="hit-group"' not in plain.content
    refused = owner_client.get("/search/", {"q": "conv:cnv_01HZZZZZZZZZZZZZZZZZZZZZZZ"})
    assert refused.status_code == 200 and b"no conversation has this id" in refused.content
