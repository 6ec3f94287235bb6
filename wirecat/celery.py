"""The Celery app. Jobs live in `<app>/jobs.py` (the `tasks` app is the owner's to-do list).

The beat table below is installed into django-celery-beat's tables by its database
scheduler, so every schedule shows, and can be edited, in the admin site.
"""

from __future__ import annotations

import os
import sys

from celery import Celery, signals
from celery.schedules import crontab
from kombu.transport import sqlalchemy as kombu_sqla

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "wirecat.settings")

# The SQLAlchemy transport crashes when `polling_interval` is passed through
# broker_transport_options (they go to create_engine), so it is set on the class.
kombu_sqla.Transport.polling_interval = 0.5

app = Celery("wirecat")
app.config_from_object("django.conf:settings", namespace="CELERY")


def _job_packages() -> list[str]:
    """Every installed app, and each capability package of the archive, may have jobs."""
    from django.apps import apps

    from archive.capabilities import CAPABILITIES

    return [config.name for config in apps.get_app_configs()] + [
        f"archive.{name}" for name in CAPABILITIES
    ]


app.autodiscover_tasks(_job_packages, related_name="jobs")


@signals.import_modules.connect  # the worker and beat, before either touches the store
def _store_ready(**_: object) -> None:
    """The worker and beat write the store: one that is read-only or not migrated stops
    them before they start, with its sentence (what, where, what to do), not a traceback
    and a restart loop."""
    from wirecat.db.faults import store_preflight

    fault = store_preflight()
    if fault is not None:
        sys.stderr.write(f"{fault}\n")
        sys.stderr.flush()
        raise SystemExit(1)  # not an Exception: Celery's signal dispatch lets it through


@signals.worker_init.connect
@signals.worker_process_init.connect
def _background_priority(**_: object) -> None:
    """A worker's jobs (imports, sync, index fills, deliveries) are background work: the
    worker and its pool's processes run at WIRECAT_BACKGROUND_NICE, so pages and the API
    (gunicorn, normal priority) come first when the cores are busy."""
    from archive.imports.services import background_priority

    background_priority()


def _beat_schedule(heartbeat_seconds: int) -> dict[str, dict[str, object]]:
    return {
        "heartbeat": {
            "task": "archive.jobs.heartbeat",
            "schedule": float(heartbeat_seconds),
            "options": {"expires": heartbeat_seconds * 0.9},
        },
        "search-stems-drain": {
            "task": "archive.jobs.search_stems_drain",
            "schedule": 60.0,
            "options": {"expires": 55.0},
        },
        "meetings-stems-drain": {
            "task": "archive.jobs.meetings_stems_drain",
            "schedule": 60.0,
            "options": {"expires": 55.0},
        },
        "notes-stems-drain": {
            "task": "archive.jobs.notes_stems_drain",
            "schedule": 60.0,
            "options": {"expires": 55.0},
        },
        # The text of stored files not read yet (a slice queues the next while files wait).
        "file-texts-extract": {
            "task": "archive.jobs.file_texts_extract",
            "schedule": 300.0,
            "options": {"expires": 290.0},
        },
        # Chats whose conversations need a build (an import or sync asks at once too).
        "conversations-build": {
            "task": "archive.jobs.conversations_build",
            "schedule": 300.0,
            "options": {"expires": 290.0},
        },
        # The meaning index: sources to cut, chunks to embed (builds ask at once too).
        "embeddings-refresh": {
            "task": "archive.jobs.embeddings_refresh",
            "schedule": 600.0,
            "options": {"expires": 590.0},
        },
        "webhooks-deliver": {
            "task": "archive.jobs.webhooks_deliver",
            "schedule": 10.0,
            "options": {"expires": 9.0},
        },
        "sync-repair-daily": {
            "task": "archive.jobs.accounts_repair",
            "schedule": crontab(hour="4", minute="15"),
            "options": {"expires": 60 * 60 * 6},
        },
        "store-optimize-nightly": {
            "task": "archive.jobs.store_optimize",
            "schedule": crontab(hour="3", minute="30"),
            "options": {"expires": 60 * 60 * 6},
        },
        # A backup into <state>/backups/, the newest WIRECAT_BACKUP_KEEP kept.
        "backup-nightly": {
            "task": "archive.jobs.backup_nightly",
            "schedule": crontab(hour="2", minute="45"),
            "options": {"expires": 60 * 60 * 6},
        },
    }


app.conf.beat_schedule = _beat_schedule(int(os.environ.get("WIRECAT_HEARTBEAT_SECONDS", "30")))
