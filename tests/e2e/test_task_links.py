"""A task's page shows what the task links (a conversation, by its title), at 1280 and
390 px, light and dark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from archive.conversations.selectors import conversation_of
from archive.conversations.services.builds import conversations_build
from archive.store.models import Chat, Message
from archive.store.sink import batch_record
from notes.services.links import link_add
from tasks.services import project_create, task_create
from tests.e2e.test_import_page import sign_in
from tests.factories import batch, message

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_task_page_lists_the_conversation_it_links(
    live_server: Any, page: Any, artifacts_dir: Path
) -> None:
    batch_record(
        batch=batch(
            message("1", "Who has the projector key for Friday's talk?", minutes=0),
            message(
                "2", "I do, at the front desk", sender="bob", minutes=1, reply_to_external_id="1"
            ),
        )
    )
    conversations_build(chat_id=Chat.objects.get().pk)
    found = conversation_of(message_id=Message.objects.get(external_id="1").pk)
    assert found is not None
    project = project_create(key="HOME", name="Home")
    task = task_create(project=project.key, title="Return the projector key")
    link_add(source=f"task:{task.key}", target=f"conversation:{found.public_id}")

    sign_in(page, live_server)
    page.goto(f"{live_server.url}/tasks/{task.key}/")
    section = page.locator("section.note-links")
    chip = section.get_by_role("link", name="Who has the projector key for Friday's talk?")
    assert chip.is_visible()
    for width, scheme in ((1280, "light"), (390, "dark")):
        page.set_viewport_size({"width": width, "height": 900})
        page.emulate_media(color_scheme=scheme)
        page.screenshot(
            path=str(artifacts_dir / f"task-links-{width}-{scheme}.png"), full_page=True
        )
        scroll = page.evaluate("document.documentElement.scrollWidth")
        assert scroll <= width  # nothing scrolls sideways
    chip.click()
    page.wait_for_url(f"**/conversations/{found.public_id}/")
