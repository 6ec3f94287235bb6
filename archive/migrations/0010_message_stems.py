"""The stems index: Snowball stems of every message, written by Python.

`message_stems` is a contentless FTS5 table (rowid = message id) with delete support; what
it holds is made by `archive.services.search_index.stems_drain` from the queue
`archive_stem_queue`. The sink queues the messages it inserts (set-wise, like the other
indexes); these triggers queue edited and removed ones. The migration queues every
message already stored.
"""

from django.db import migrations

FORWARD = [
    """
    CREATE VIRTUAL TABLE message_stems USING fts5(
        stems,
        content='',
        contentless_delete=1,
        tokenize='unicode61 remove_diacritics 2'
    )
    """,
    "CREATE TABLE archive_stem_queue (message_id INTEGER PRIMARY KEY)",
    """
    CREATE TRIGGER message_stems_au AFTER UPDATE OF text ON archive_message BEGIN
        INSERT OR IGNORE INTO archive_stem_queue (message_id) VALUES (new.id);
    END
    """,
    """
    CREATE TRIGGER message_stems_ad AFTER DELETE ON archive_message BEGIN
        INSERT OR IGNORE INTO archive_stem_queue (message_id) VALUES (old.id);
    END
    """,
    "INSERT INTO archive_stem_queue (message_id) SELECT id FROM archive_message",
]

REVERSE = [
    "DROP TRIGGER IF EXISTS message_stems_ad",
    "DROP TRIGGER IF EXISTS message_stems_au",
    "DROP TABLE IF EXISTS archive_stem_queue",
    "DROP TABLE IF EXISTS message_stems",
]


class Migration(migrations.Migration):
    dependencies = [("archive", "0009_search_config")]

    operations = [migrations.RunSQL(sql=FORWARD, reverse_sql=REVERSE)]
