"""The API shapes of the meaning index's readiness."""

from __future__ import annotations

from ninja import Schema


class KindReadinessOut(Schema):
    """One kind of chunk (conversation, note, transcript, file): sources due to be cut
    (again), chunks cut, chunks with a vector of the model, chunks waiting for one, and
    whether nothing waits."""

    sources_due: int
    chunks: int
    embedded: int
    waiting: int
    ready: bool


class MeaningStatusOut(Schema):
    """How far the meaning index is: the model the setting names, each kind's readiness,
    and in all the share of chunks embedded (`percent`, 100 with no chunks) and whether
    every kind is ready (a meaning search finds only what is embedded)."""

    model: str
    kinds: dict[str, KindReadinessOut]
    sources_due: int
    chunks: int
    embedded: int
    percent: int
    ready: bool
