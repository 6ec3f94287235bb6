"""Fixtures of the archive's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.providers.bot_api import BotApi
from wirecat.celery import app


@pytest.fixture
def celery_inline() -> Iterator[None]:
    """Celery runs a job where it is enqueued (its own eager mode): what a worker would do
    with it, at once. With `django_capture_on_commit_callbacks(execute=True)`, the jobs a
    use case enqueues after its commit run there."""
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


@pytest.fixture
def bot_api() -> Iterator[BotApi]:
    """A local server speaking the Telegram Bot API's JSON."""
    api = BotApi()
    yield api
    api.close()
