"""Importing through the page, in a real browser, run by a real Celery worker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from archive.imports.models import ImportJob
from archive.owner.services import login_code_issue
from archive.store.models import Message
from tests.archive.test_worker import celery_worker
from tests.conftest import OWNER_PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def sign_in(page: Any, live_server: Any) -> None:
    issued = login_code_issue(base_url=live_server.url)
    page.goto(issued.url)
    page.get_by_label("New password").fill(OWNER_PASSWORD)
    page.get_by_label("Repeat it").fill(OWNER_PASSWORD)
    page.get_by_role("button", name="Set password and sign in").click()
    page.wait_for_url(live_server.url + "/")


def test_upload_an_export_and_watch_it_finish(
    live_server: Any, page: Any, tmp_path: Path, settings: Any, artifacts_dir: Path
) -> None:
    messages = [
        {
            "id": i,
            "type": "message",
            "date": "2022-01-01T09:00:00",
            "date_unixtime": str(1_641_027_600 + i * 60),
            "from": "Dana",
            "from_id": "user7",
            "text": f"hello number {i}",
        }
        for i in range(1, 301)
    ]
    export = tmp_path / "result.json"
    export.write_text(
        json.dumps({"name": "Book club", "type": "private_group", "id": 5, "messages": messages})
    )
    sign_in(page, live_server)
    with celery_worker(settings.CELERY_BROKER_URL, tmp_path):
        page.get_by_role("link", name="Import", exact=True).click()
        page.get_by_label("Upload an export").set_input_files(str(export))
        page.get_by_role("button", name="Start import").click()
        page.wait_for_url("**/imports/imp_*/")
        # The progress card polls until the worker is done, then lists the chats.
        page.get_by_role("link", name="Book club").wait_for(timeout=60_000)
    assert "Done" in page.locator("#progress").inner_text()
    assert page.locator(".counts").inner_text().count("300") >= 1
    page.screenshot(path=str(artifacts_dir / "import-done.png"), full_page=True)
    job = ImportJob.objects.get()
    assert (job.status, job.added) == ("done", 300)
    assert Message.objects.count() == 300
    page.get_by_role("link", name="Book club").click()
    assert page.locator("article.msg").count() == 50
