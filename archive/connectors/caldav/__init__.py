"""CalDAV, live: one calendar collection pulled with the `caldav` library (live.py)."""
