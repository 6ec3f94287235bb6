"""Shared by the Telegram export tests: the fixtures folder and small lookups."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from archive.imports.models import ImportJob
from archive.store.models import Message
from tests.connectors.conftest import FIXTURES

TG = FIXTURES / "telegram"
Run = Callable[..., ImportJob]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def msg(chat_external_id: str, external_id: str) -> Message:
    return Message.objects.get(chat__external_id=chat_external_id, external_id=external_id)
