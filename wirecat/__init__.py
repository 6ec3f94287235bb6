"""WireCat: one owner's message archive and agent gateway."""

from wirecat.celery import app as celery_app

__all__ = ["celery_app"]
