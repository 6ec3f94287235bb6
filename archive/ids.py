"""Public ids: a type prefix and a ULID (`msg_01J…`). Rowids never leave the process."""

from __future__ import annotations

from ulid import ULID


def new_public_id(prefix: str) -> str:
    return f"{prefix}_{ULID()}"


def new_message_id() -> str:
    return new_public_id("msg")


def new_attachment_id() -> str:
    return new_public_id("att")


def new_import_id() -> str:
    return new_public_id("imp")
