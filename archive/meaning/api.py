"""The meaning index for agents: how ready it is (what a meaning search can find yet)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from archive.meaning.schemas import KindReadinessOut, MeaningStatusOut
from archive.meaning.selectors import readiness
from archive.web.api import answers, requires, scope

router = Router(tags=["meaning"])


@router.get(
    "/meaning/status",
    response=answers(MeaningStatusOut),
    summary="How much of the archive the meaning search can find yet",
    **scope("messages.read"),
)
@requires("messages.read")
def meaning_status(request: HttpRequest) -> MeaningStatusOut:
    """The model the vectors are made with and, per kind of chunk (conversation, note,
    transcript, file): sources due to be cut, chunks, chunks embedded, chunks waiting,
    and whether the kind is ready. Counts only, no text. The index is brought up to date
    by the worker's job (and `wirecat embeddings refresh`); a meaning search finds only
    what is embedded."""
    found = readiness()
    return MeaningStatusOut(
        model=found.model,
        kinds={
            name: KindReadinessOut(
                sources_due=kind.sources_due,
                chunks=kind.chunks,
                embedded=kind.embedded,
                waiting=kind.waiting,
                ready=kind.ready,
            )
            for name, kind in found.kinds.items()
        },
        sources_due=found.sources_due,
        chunks=found.chunks,
        embedded=found.embedded,
        percent=found.percent,
        ready=found.ready,
    )
