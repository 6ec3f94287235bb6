"""Idempotency keys for sends: the first answer to a key is kept (with a hash of the body)
for 24 hours; a retry with the same key and body gets that answer again and does nothing;
the same key with another body is a conflict."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from archive.gateway.models import Agent, IdempotencyKey
from wirecat.errors import Conflict, Invalid

KEEP = timedelta(hours=24)
KEY_MAX = 200


def key_clean(key: str | None) -> str:
    if not key or not key.strip():
        raise Invalid("Idempotency-Key: the header is required (any unique string per send)")
    if len(key) > KEY_MAX or not key.isprintable():
        raise Invalid(f"Idempotency-Key: at most {KEY_MAX} printable characters")
    return key.strip()


def idempotent(
    *, agent: Agent | None, key: str, body: bytes, run: Callable[[], tuple[int, dict[str, Any]]]
) -> tuple[int, dict[str, Any], bool]:
    """(status, answer, replayed). `run` does the work and gives its answer; it runs at
    most once per key and body within KEEP, in one transaction with the key's row (so two
    retries racing each other cannot both run)."""
    digest = hashlib.sha256(body).hexdigest()
    with transaction.atomic():
        IdempotencyKey.objects.filter(created_at__lt=timezone.now() - KEEP).delete()
        kept = IdempotencyKey.objects.filter(agent=agent, key=key).first()
        if kept is not None:
            if kept.body_hash != digest:
                raise Conflict("Idempotency-Key: already used with a different body; use a new key")
            return kept.status, kept.response, True
        status, answer = run()
        IdempotencyKey.objects.create(
            agent=agent, key=key, body_hash=digest, status=status, response=answer
        )
    return status, answer, False
