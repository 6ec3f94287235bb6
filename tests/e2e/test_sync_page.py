"""Connecting a Telegram bot on the Sync page, in a real browser; a real Celery worker runs
the first sync against a local Bot API server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from archive.store.models import Message
from archive.sync.models import SyncAccount
from tests.archive.test_worker import celery_worker
from tests.e2e.test_import_page import sign_in
from tests.providers.bot_api import ALICE, BOB, GROUP, TOKEN, BotApi

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def bot_api() -> Iterator[BotApi]:
    api = BotApi()
    yield api
    api.close()


def test_connect_a_bot_and_watch_its_first_sync(
    live_server: Any, page: Any, tmp_path: Path, settings: Any, artifacts_dir: Path, bot_api: BotApi
) -> None:
    for n in range(1, 41):
        bot_api.post(GROUP, ALICE if n % 2 else BOB, f"evening message {n} <b>not bold</b>")
    sign_in(page, live_server)
    # The worker shares the state folder, as `wirecat start` arranges: the credentials key is there.
    with celery_worker(settings.CELERY_BROKER_URL, Path(settings.STATE_DIR)):
        page.get_by_role("link", name="Sync", exact=True).click()
        form = page.locator(
            "section", has=page.get_by_role("heading", name="Connect a Telegram bot")
        )
        form.get_by_label("Bot token").fill(TOKEN)
        form.get_by_label("Sync every (seconds)").fill("600")
        form.locator("summary", has_text="Advanced").click()
        form.get_by_label("API address").fill(bot_api.url)
        form.get_by_role("button", name="Connect").click()
        page.wait_for_url("**/sync/")
        assert "Connected @archivist_bot" in page.locator("main").inner_text()
        # The worker runs the first sync; reloading shows its figures.
        for _ in range(60):
            if Message.objects.count() == 40 and SyncAccount.objects.get().last_run_at:
                break
            page.wait_for_timeout(500)
        page.reload()
    card = page.locator(".sync-account")
    assert "40 new, 0 changed" in card.inner_text()
    assert "offset=500041" in card.inner_text()
    html = page.content()
    assert TOKEN not in html and TOKEN.split(":")[1] not in html
    page.screenshot(path=str(artifacts_dir / "sync-page.png"), full_page=True)
