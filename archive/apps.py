from django.apps import AppConfig


class ArchiveConfig(AppConfig):
    name = "archive"
    verbose_name = "Archive"
    default_auto_field = "django.db.models.BigAutoField"
