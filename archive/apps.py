from importlib import import_module
from importlib.util import find_spec

from django.apps import AppConfig

from archive.capabilities import CAPABILITIES


class ArchiveConfig(AppConfig):
    name = "archive"
    verbose_name = "Archive"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The live connectors' senders join the send port (archive/connectors/sending.py).
        from archive.sync.services.sending import senders_register

        senders_register()
        # Each capability's jobs connect their handlers to the store's after-commit effects
        # (archive/store/effects.py) when imported: import them in every process, as the
        # Celery worker does, so an effect finds its handler wherever its use case runs.
        for name in CAPABILITIES:
            if find_spec(f"archive.{name}.jobs") is not None:
                import_module(f"archive.{name}.jobs")
