"""The dashboard's Meaning search card in a real browser, half embedded: the bar as wide as
the share embedded, a row per kind, no sideways scroll. Screenshots at 1280 px light and
390 px dark: tests/artifacts/dashboard-meaning-<width>-<scheme>.png."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from archive.conversations.services.builds import conversations_build
from archive.meaning.selectors import readiness
from archive.meaning.services.refresh import embeddings_refresh
from archive.store.models import Chat
from archive.store.sink import batch_record
from notes.services.notes import note_create
from tests.e2e.test_import_page import sign_in
from tests.factories import batch, message

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_meaning_card_shows_progress(
    live_server: Any, page: Any, browser: Any, artifacts_dir: Path
) -> None:
    batch_record(
        batch=batch(
            message("1", "the printer on the third floor jams again"),
            message("2", "I'll call the technician tomorrow", sender="bob", minutes=1),
        )
    )
    conversations_build(chat_id=Chat.objects.get().pk)
    for title in ("Printer", "Groceries", "Holiday plans"):
        note_create(title=title, body=f"What to remember about {title.lower()}.")
    embeddings_refresh(most_chunks=2)
    ready = readiness()
    assert 0 < ready.embedded < ready.chunks
    sign_in(page, live_server)
    state = page.context.storage_state()
    for width, height, scheme in ((1280, 900, "light"), (390, 844, "dark")):
        context = browser.new_context(
            storage_state=state, viewport={"width": width, "height": height}, color_scheme=scheme
        )
        tab = context.new_page()
        tab.goto(live_server.url + "/")
        card = tab.locator("section[aria-labelledby=meaning-h]")
        bar = card.get_by_role("progressbar", name="Chunks embedded")
        assert bar.get_attribute("aria-valuenow") == str(ready.embedded)
        filled = bar.locator("span").evaluate(
            "el => el.getBoundingClientRect().width / el.parentElement.clientWidth"
        )
        assert abs(filled - ready.embedded / ready.chunks) < 0.05
        assert card.locator("tbody tr").count() == 4
        assert card.locator("tr[data-kind=note]").is_visible()
        table = card.locator("table")
        assert table.evaluate("el => el.scrollWidth <= el.clientWidth"), "the table scrolls"
        width_now = tab.evaluate("document.documentElement.scrollWidth")
        assert width_now <= width, f"the dashboard is {width_now}px wide"
        tab.evaluate("window.scrollTo(0, 0)")
        box = card.bounding_box()
        assert box is not None
        tab.screenshot(
            path=str(artifacts_dir / f"dashboard-meaning-{width}-{scheme}.png"),
            full_page=True,
            clip={"x": 0, "y": max(box["y"] - 8, 0), "width": width, "height": box["height"] + 16},
        )
        context.close()
