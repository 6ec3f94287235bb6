"""The API's overview of the store: counts and the workers' state."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from archive.owner.schemas import StatsOut
from archive.owner.selectors import store_counts, worker_status
from archive.web.api import answers, requires, scope

router = Router(tags=["archive"])


@router.get(
    "/stats",
    response=answers(StatsOut),
    summary="Counts of the archive and worker liveness",
    **scope("messages.read"),
)
@requires("messages.read")
def stats(request: HttpRequest) -> StatsOut:
    counts = store_counts()
    worker = worker_status()
    return StatsOut(
        accounts=counts.accounts,
        chats=counts.chats,
        messages=counts.messages,
        attachments=counts.attachments,
        worker_seen_at=worker.seen_at if worker else None,
        worker_alive=bool(worker and worker.alive),
    )
