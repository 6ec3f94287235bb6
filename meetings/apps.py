from django.apps import AppConfig


class MeetingsConfig(AppConfig):
    name = "meetings"
    verbose_name = "Meetings"
    default_auto_field = "django.db.models.BigAutoField"
