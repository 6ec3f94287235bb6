"""Secrets at rest: a live account's credentials (bot tokens, sessions, passwords) are
sealed with Fernet (AES-128-CBC + HMAC-SHA256, from `cryptography`) under a key kept in the
state folder as `credentials.key`, mode 600, made on first use. The store alone (a copied
database file, a backup) does not open them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

KEY_FILE = "credentials.key"


class SealedError(Exception):
    """The sealed credentials do not open with this state folder's key."""


def _key_path() -> Path:
    return Path(settings.STATE_DIR) / KEY_FILE


def _key() -> bytes:
    path = _key_path()
    try:
        return path.read_bytes().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    key = Fernet.generate_key()
    # O_EXCL: two processes making the key at once agree on the first one written.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_bytes().strip()
    with os.fdopen(fd, "wb") as handle:
        handle.write(key)
    return key


def seal(values: dict[str, Any]) -> str:
    """`values` as one opaque token (JSON inside, encrypted and authenticated)."""
    return Fernet(_key()).encrypt(json.dumps(values).encode()).decode()


def unseal(token: str) -> dict[str, Any]:
    if not token:
        return {}
    try:
        opened: dict[str, Any] = json.loads(Fernet(_key()).decrypt(token.encode()))
    except InvalidToken as exc:
        raise SealedError(
            f"the stored credentials do not open with {_key_path()} (was the key replaced?)"
        ) from exc
    return opened
