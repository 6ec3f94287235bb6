"""archive.store.jobs"""

from __future__ import annotations

import logging

from celery import shared_task

from archive.store.services.maintenance import store_optimize as store_optimize_service

log = logging.getLogger(__name__)


@shared_task(name="archive.jobs.store_optimize", ignore_result=True)
def store_optimize() -> str:
    """Nightly: FTS optimize on every index, then PRAGMA optimize."""
    return "; ".join(store_optimize_service())
