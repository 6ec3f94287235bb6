from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from archive.schemas import StatsOut
from archive.selectors.archive import store_counts, worker_status

router = Router(tags=["archive"])


@router.get("/stats", response=StatsOut, summary="Counts of the archive and worker liveness")
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
