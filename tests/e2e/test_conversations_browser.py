"""The Conversations view in a real browser, on a lifelike chat recorded by the sink and
built by the real builder: from a message's menu on the chat page to its conversation,
open and marked, the message in view; a fold opened (its messages loaded) and closed; the
same without JavaScript; "Show only this conversation"; the list newest active first.
Screenshots at 1280 and 390 px, light and dark:
tests/artifacts/conversations-<list|one>-<width>-<scheme>.png."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from archive.conversations.page_reads import LIST_PAGE
from archive.conversations.selectors import chat_conversations, conversation_of
from archive.conversations.services.builds import conversations_build
from archive.store.models import Chat, Message
from archive.store.sink import batch_record
from tests.conversations.test_pages import threads
from tests.e2e.chat_support import long_chat, message_menu_item
from tests.e2e.test_import_page import sign_in
from tests.factories import batch, message

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def built_chat() -> Chat:
    chat = long_chat(400)
    conversations_build(chat_id=chat.pk, pause_seconds=0)
    return chat


def in_view(page: Any, selector: str) -> bool:
    """The element is below the sticky header and above the window's bottom edge."""
    return bool(
        page.evaluate(
            """(selector) => {
            const el = document.querySelector(selector);
            const head = document.querySelector('.chat-head').getBoundingClientRect().bottom;
            const box = el.getBoundingClientRect();
            return box.top >= head - 1 && box.bottom <= window.innerHeight + 1;
        }""",
            selector,
        )
    )


def no_sideways_scroll(page: Any) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"{page.url} is {width}px wide"


def test_from_a_message_to_its_conversation_and_back(live_server: Any, page: Any) -> None:
    chat = built_chat()
    # A reply the messenger recorded, a few pages back: its conversation has its parent too.
    reply = Message.objects.filter(chat=chat, reply_to__isnull=False).order_by("-sent_at").first()
    assert reply is not None
    conversation = conversation_of(message_id=reply.pk)
    assert conversation is not None and conversation.message_count >= 2
    sign_in(page, live_server)
    page.goto(f"{live_server.url}/m/{reply.public_id}/")
    message_menu_item(page, reply.public_id, "Show its conversation")
    page.wait_for_url(f"**/chats/{chat.pk}/conversations/?at={reply.public_id}#*")
    fold = page.locator(f"details#{conversation.public_id}")
    assert fold.evaluate("el => el.open && el.classList.contains('current')")
    assert page.locator("details.conv.current").count() == 1
    focused = page.locator(f"article#{reply.public_id}")
    assert "focus" in (focused.get_attribute("class") or "")
    assert in_view(page, f"article#{reply.public_id}")
    # Its messages are the conversation's, in order, the parent among them.
    shown = fold.locator("article.msg").evaluate_all("els => els.map(e => e.id)")
    assert reply.reply_to is not None and reply.reply_to.public_id in shown
    assert shown.index(reply.reply_to.public_id) < shown.index(reply.public_id)
    # "Show only this conversation": its own page, the same messages.
    fold.get_by_role("link", name="Show only this conversation").click()
    page.wait_for_url(f"**/conversations/{conversation.public_id}/")
    assert page.locator("h2#conv-title").inner_text().strip() == (conversation.title or "(no text)")
    assert page.locator(".conv-messages article.msg").count() == min(conversation.message_count, 50)
    note = page.get_by_role("link", name="Write a note").first
    assert note.get_attribute("href") == f"/notes/new/?link=conversation:{conversation.public_id}"
    # And back to the list, at it.
    page.get_by_role("link", name="All conversations").click()
    page.wait_for_url(f"**/chats/{chat.pk}/conversations/?open={conversation.public_id}#*")
    assert page.locator(f"details#{conversation.public_id}[open]").count() == 1


def test_folds_open_and_close_and_the_list_is_newest_first(live_server: Any, page: Any) -> None:
    # More conversations than a page holds, split by the agent's answers (as the rules
    # would split them is theirs to say).
    chat = threads(LIST_PAGE + 5, replies=3)
    views, total = chat_conversations(chat_id=chat.pk, limit=LIST_PAGE)
    assert total == LIST_PAGE + 5
    sign_in(page, live_server)
    page.goto(f"{live_server.url}/chats/{chat.pk}/")
    page.get_by_role("link", name="Conversations").click()
    page.wait_for_url(f"**/chats/{chat.pk}/conversations/")
    ids = page.locator("details.conv").evaluate_all("els => els.map(e => e.id)")
    assert ids == [v.public_id for v in views]
    assert page.locator("details.conv[open]").count() == 0
    # The third conversation opens: its messages load into it; it closes again.
    third = views[2]
    fold = page.locator(f"details#{third.public_id}")
    fold.locator("> summary").click()
    fold.locator(".conv-body article.msg").first.wait_for()
    assert fold.locator(".conv-body article.msg").count() == min(third.message_count, 50)
    assert fold.evaluate("el => el.open")
    fold.locator("> summary").click()
    assert not fold.evaluate("el => el.open")
    assert not fold.locator(".conv-body article.msg").first.is_visible()
    # The next page holds the earlier ones.
    page.get_by_role("link", name="Earlier").click()
    page.wait_for_url("**?page=2")
    later = chat_conversations(chat_id=chat.pk, limit=LIST_PAGE, offset=LIST_PAGE)[0]
    assert page.locator("details.conv").first.get_attribute("id") == later[0].public_id


def test_a_fold_opens_without_javascript(live_server: Any, page: Any, browser: Any) -> None:
    chat = built_chat()
    views, _ = chat_conversations(chat_id=chat.pk, limit=30)
    sign_in(page, live_server)
    context = browser.new_context(
        storage_state=page.context.storage_state(), java_script_enabled=False
    )
    tab = context.new_page()
    tab.goto(f"{live_server.url}/chats/{chat.pk}/conversations/")
    target = views[1]
    fold = tab.locator(f"details#{target.public_id}")
    fold.locator("> summary").click()
    # Opened by the browser alone: its link to the page with it open shows.
    link = fold.get_by_role("link", name=f"Show its {target.message_count} message")
    assert link.is_visible()
    link.click()
    tab.wait_for_url(f"**open={target.public_id}#{target.public_id}")
    assert tab.locator(f"details#{target.public_id}[open] article.msg").count() == min(
        target.message_count, 50
    )
    context.close()


def test_screenshots(live_server: Any, page: Any, browser: Any, artifacts_dir: Path) -> None:
    chat = built_chat()
    reply = Message.objects.filter(chat=chat, reply_to__isnull=False).order_by("-sent_at").first()
    assert reply is not None
    conversation = conversation_of(message_id=reply.pk)
    assert conversation is not None
    batch_record(batch=batch(message("1", "Nothing built here yet", chat="unbuilt")))
    unbuilt = Chat.objects.get(external_id="unbuilt")
    sign_in(page, live_server)
    state = page.context.storage_state()
    for width, height in ((1280, 800), (390, 844)):
        for scheme in ("light", "dark"):
            context = browser.new_context(
                storage_state=state,
                viewport={"width": width, "height": height},
                color_scheme=scheme,
            )
            tab = context.new_page()
            tab.goto(f"{live_server.url}/chats/{chat.pk}/conversations/")
            tab.locator("details.conv").first.wait_for()
            no_sideways_scroll(tab)
            tab.screenshot(path=str(artifacts_dir / f"conversations-list-{width}-{scheme}.png"))
            tab.goto(f"{live_server.url}/m/{reply.public_id}/conversation/")
            tab.locator(f"article#{reply.public_id}.focus").wait_for()
            no_sideways_scroll(tab)
            tab.screenshot(path=str(artifacts_dir / f"conversations-at-{width}-{scheme}.png"))
            # The message is in the middle of the window, under the header.
            assert in_view(page=tab, selector=f"article#{reply.public_id}")
            middle = tab.locator(f"article#{reply.public_id}").evaluate(
                "el => el.getBoundingClientRect().top + el.getBoundingClientRect().height / 2"
            )
            assert abs(middle - height / 2) < height / 4
            tab.goto(f"{live_server.url}/chats/{chat.pk}/")
            tab.locator("article.msg").last.wait_for()
            no_sideways_scroll(tab)
            tab.screenshot(path=str(artifacts_dir / f"conversations-tabs-{width}-{scheme}.png"))
            tab.goto(f"{live_server.url}/chats/{unbuilt.pk}/conversations/")
            tab.get_by_text("conversations are not built yet").wait_for()
            no_sideways_scroll(tab)
            tab.screenshot(path=str(artifacts_dir / f"conversations-unbuilt-{width}-{scheme}.png"))
            tab.goto(f"{live_server.url}/conversations/{conversation.public_id}/")
            tab.locator("h2#conv-title").wait_for()
            no_sideways_scroll(tab)
            tab.screenshot(
                path=str(artifacts_dir / f"conversations-one-{width}-{scheme}.png"), full_page=True
            )
            context.close()
