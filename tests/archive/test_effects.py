"""After-commit effects: run once their transaction commits, never for one that rolls back,
and once per transaction however often a use case asks (a batch of saves, one job)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import transaction

from archive.store import effects

pytestmark = pytest.mark.django_db(transaction=True)

NAME = "test.counted"


@pytest.fixture
def calls() -> Iterator[list[dict[str, object]]]:
    seen: list[dict[str, object]] = []

    def handler(**args: object) -> None:
        seen.append(args)

    effects.effect_connect(NAME, handler)
    yield seen
    effects._handlers.pop(NAME, None)


def test_the_same_effect_asked_for_twice_in_a_transaction_runs_once(calls: list) -> None:
    with transaction.atomic():
        for _ in range(100):
            effects.on_commit_effect(NAME, chat=1)
        effects.on_commit_effect(NAME, chat=2)
        assert calls == []
    assert calls == [{"chat": 1}, {"chat": 2}]
    effects.on_commit_effect(NAME, chat=1)  # outside a transaction: at once
    assert calls[-1] == {"chat": 1} and len(calls) == 3


def test_an_effect_of_a_savepoint_that_rolls_back_is_asked_for_again(calls: list) -> None:
    with transaction.atomic():
        try:
            with transaction.atomic():
                effects.on_commit_effect(NAME, chat=1)
                raise RuntimeError("the savepoint rolls back")
        except RuntimeError:
            pass
        effects.on_commit_effect(NAME, chat=1)
    assert calls == [{"chat": 1}]
    with transaction.atomic():
        effects.on_commit_effect(NAME, chat=3)
        with transaction.atomic():
            effects.on_commit_effect(NAME, chat=3)  # pending already, outside the savepoint
    assert calls == [{"chat": 1}, {"chat": 3}]
