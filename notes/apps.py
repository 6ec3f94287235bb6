from importlib import import_module

from django.apps import AppConfig


def _people_named(sender: object, person_ids: list[int], **kwargs: object) -> None:
    from notes.services.links import links_resolve_people

    links_resolve_people(person_ids=person_ids)


class NotesConfig(AppConfig):
    name = "notes"
    verbose_name = "Notes"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from archive.store.signals import people_named

        # A person named or renamed, or an identity linked to one, resolves the notes' links
        # that wait for that name, in the same transaction (archive/store/signals.py).
        people_named.connect(_people_named, dispatch_uid="notes.resolve_people")
        # The notes' jobs connect their handlers to the after-commit effects, in every
        # process (as the archive and meetings do).
        import_module("notes.jobs")
