"""The notes' Celery jobs (filled in by the notes search)."""
