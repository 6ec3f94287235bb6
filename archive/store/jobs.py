"""archive.store.jobs"""

from __future__ import annotations

import logging

from celery import shared_task

from archive.store.effects import effect_connect
from archive.store.services.attachments import THUMBNAIL_WANTED
from archive.store.services.attachments import thumbnail_make as thumbnail_make_service
from archive.store.services.maintenance import store_optimize as store_optimize_service
from wirecat.errors import NotFound

log = logging.getLogger(__name__)


@shared_task(name="archive.jobs.store_optimize", ignore_result=True)
def store_optimize() -> str:
    """Nightly: FTS optimize on every index, then PRAGMA optimize."""
    return "; ".join(store_optimize_service())


@shared_task(name="archive.jobs.thumbnail_make", ignore_result=True)
def thumbnail_make(public_id: str) -> str:
    """Decode an image attachment and keep its thumbnail (on the `index` queue): untrusted
    bytes are decoded here, in the worker, never in a web request."""
    try:
        made = thumbnail_make_service(public_id=public_id)
    except NotFound as exc:
        return f"{public_id}: {exc}"
    return f"{public_id}: {'thumbnail made' if made else 'no image to draw'}"


def _thumbnail_wanted(*, public_id: str) -> None:
    # A broker that does not answer is not waited for: the next request asks again.
    thumbnail_make.apply_async(kwargs={"public_id": public_id}, retry=False)


# The first request for a thumbnail asks for it (archive/store/services/attachments.py).
effect_connect(THUMBNAIL_WANTED, _thumbnail_wanted)
