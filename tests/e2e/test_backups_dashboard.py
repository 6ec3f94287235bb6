"""The dashboard's Backups card in a real browser: the last good backup (age, size, file)
and a failure since, in red, its sentence wrapped inside the card. Screenshots at 1280 px
light and 390 px dark: tests/artifacts/dashboard-backups-<width>-<scheme>.png."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from archive.backups.jobs import backup_nightly
from archive.backups.models import BackupRun
from tests.backups.support import store_fill
from tests.e2e.test_import_page import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_backups_card_shows_the_last_good_one_and_a_failure(
    live_server: Any, page: Any, browser: Any, artifacts_dir: Path, settings: Any
) -> None:
    store_fill()
    assert "bytes" in backup_nightly()
    good = BackupRun.objects.get()
    BackupRun.objects.filter(pk=good.pk).update(finished_at=timezone.now() - timedelta(hours=26))
    folder = Path(settings.STATE_DIR) / "backups"
    moved = [path.rename(folder.parent / path.name) for path in list(folder.iterdir())]
    folder.rmdir()
    folder.write_text("in the way")
    backup_nightly()
    failed = BackupRun.objects.get(ok=False)
    assert len(moved) == 1 and moved[0].is_file()

    sign_in(page, live_server)
    state = page.context.storage_state()
    for width, height, scheme in ((1280, 900, "light"), (390, 844, "dark")):
        context = browser.new_context(
            storage_state=state, viewport={"width": width, "height": height}, color_scheme=scheme
        )
        tab = context.new_page()
        tab.goto(live_server.url + "/")
        card = tab.locator("section[aria-labelledby=backups-h]")
        last = card.locator("#backup-last")
        assert "Last good backup 1\xa0day" in last.inner_text()
        assert Path(good.path).name in last.inner_text()
        alert = card.get_by_role("alert")
        assert failed.error in alert.inner_text()
        red = alert.evaluate("el => getComputedStyle(el).color")
        normal = last.evaluate("el => getComputedStyle(el).color")
        assert red != normal, "the failure is not set apart"
        width_now = tab.evaluate("document.documentElement.scrollWidth")
        assert width_now <= width, f"the dashboard is {width_now}px wide"
        box = card.bounding_box()
        assert box is not None and box["x"] + box["width"] <= width
        tab.screenshot(
            path=str(artifacts_dir / f"dashboard-backups-{width}-{scheme}.png"),
            full_page=True,
            clip={"x": 0, "y": max(box["y"] - 8, 0), "width": width, "height": box["height"] + 16},
        )
        context.close()
