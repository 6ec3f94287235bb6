"""Browser tests: Playwright driving Debian's Chromium (Playwright's own browser download
does not work on these machines). Screenshots go to tests/artifacts/ (or
$WIRECAT_ARTIFACTS) and are kept as test artifacts."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-gpu",
    "--no-first-run",
]


def chromium_path() -> str | None:
    for candidate in (
        os.environ.get("WIRECAT_CHROMIUM"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
    ):
        if candidate and Path(candidate).exists():
            return candidate
    return None


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    default = Path(__file__).resolve().parents[1] / "artifacts"
    folder = Path(os.environ.get("WIRECAT_ARTIFACTS", default))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    executable = chromium_path()
    if executable is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's chromium package for the browser tests")
        pytest.skip("Chromium is not installed here; CI installs Debian's chromium")
    # Playwright's sync API runs an event loop in this thread; Django's ORM calls made by
    # the test itself (fixtures, assertions) are still synchronous and safe.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    yield tab
    context.close()
