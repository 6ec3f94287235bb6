from importlib import import_module

from django.apps import AppConfig


class MeetingsConfig(AppConfig):
    name = "meetings"
    verbose_name = "Meetings"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The meetings' jobs connect their handlers to the store's after-commit effects
        # (an invitation stored with a mail): import them in every process, as the archive
        # does its capabilities' (archive/apps.py).
        import_module("meetings.jobs")
