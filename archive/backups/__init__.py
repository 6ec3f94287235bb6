"""Backups of the store: a consistent snapshot of the database, the blobs it references
and, when asked, the keys, in one archive file with a manifest; the restore that checks
it before it becomes a state folder; the nightly job and its record."""
