from django.apps import AppConfig


class ArchiveConfig(AppConfig):
    name = "archive"
    verbose_name = "Archive"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The live connectors' senders join the send port (archive/connectors/sending.py).
        from archive.sync.services import senders_register

        senders_register()
