"""The `wirecat` console script: the same commands as `manage.py`."""

import os
import sys

from wirecat.paths import umask_private


def main() -> None:
    # Files the commands make (the store, the broker, keys, blobs) are the owner's alone;
    # `wirecat start` hands this umask to gunicorn, the worker and beat.
    umask_private()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "wirecat.settings")
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except Exception as exc:
        # A read-only state folder, a full disk, a store never migrated: one sentence
        # saying what, where and what to do, not a traceback (wirecat/db/faults.py).
        from wirecat.db.faults import store_fault

        fault = store_fault(exc)
        if fault is None or "--traceback" in sys.argv:
            raise
        sys.stderr.write(f"{fault}\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
