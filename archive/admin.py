"""The admin site's pages for the archive: each capability registers its own models in
`archive/<capability>/admin.py`; Django's admin autodiscovery imports only this module,
so it imports those."""

from importlib import import_module

from archive.capabilities import CAPABILITIES

for _name in CAPABILITIES:
    try:
        import_module(f"archive.{_name}.admin")
    except ModuleNotFoundError as exc:  # a capability without admin pages
        if exc.name != f"archive.{_name}.admin":
            raise
