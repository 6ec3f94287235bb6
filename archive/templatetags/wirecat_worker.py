"""Whether a worker is running, for every page where a job waits for one.

`{% worker_state as worker %}` gives the newest heartbeat's state (`worker.alive`,
`worker.seen_at`); `templates/archive/_no_worker.html` uses it to say "No worker is running"
on the pages whose jobs would otherwise wait in silence (tag all results, an import, the
Sync page's schedule, approved sends). The heartbeat is written by a job that beat
schedules and a worker runs, so a fresh one means both are up. It is read once per request.
"""

from __future__ import annotations

from typing import Any

from django import template

from archive.owner.selectors import WorkerStatus, worker_status

register = template.Library()

_MISSING = object()


@register.simple_tag(takes_context=True)
def worker_state(context: Any) -> WorkerStatus | None:
    """The newest worker heartbeat (None when no worker ever reported), read once per
    request however many parts of the page ask."""
    request = context.get("request")
    known = getattr(request, "_wirecat_worker", _MISSING) if request is not None else _MISSING
    if known is not _MISSING:
        return known  # type: ignore[return-value]
    found = worker_status()
    if request is not None:
        request._wirecat_worker = found
    return found
