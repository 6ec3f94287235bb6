"""New messages are indexed by the sink, set-wise, in the transaction that inserts them.

The sink is the only code that inserts message rows (a run-time guard and an architecture
test hold it to that), and it already indexed every batch with one INSERT … SELECT per FTS
table while the per-row insert triggers stood aside (0006). Those triggers still cost a
call per row just to decide to do nothing (a third of the insert's time in a large
import), so they and their switch go. Edits and deletions stay with the `_au`/`_ad`
triggers: they are rare and row-at-a-time by nature.
"""

from django.db import migrations

FORWARD = [
    "DROP TRIGGER message_fts_ai",
    "DROP TRIGGER message_trigram_ai",
    "DROP TABLE archive_fts_control",
]

REVERSE = [
    """
    CREATE TABLE archive_fts_control (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        paused INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1))
    )
    """,
    "INSERT INTO archive_fts_control (id, paused) VALUES (1, 0)",
    """
    CREATE TRIGGER message_fts_ai AFTER INSERT ON archive_message
    WHEN (SELECT paused FROM archive_fts_control WHERE id = 1) = 0 BEGIN
        INSERT INTO message_fts(rowid, text) VALUES (new.id, new.text);
    END
    """,
    """
    CREATE TRIGGER message_trigram_ai AFTER INSERT ON archive_message
    WHEN (SELECT paused FROM archive_fts_control WHERE id = 1) = 0 BEGIN
        INSERT INTO message_trigram(rowid, text) VALUES (new.id, new.text);
    END
    """,
]


class Migration(migrations.Migration):
    dependencies = [("archive", "0007_import_staged_skips")]

    operations = [migrations.RunSQL(sql=FORWARD, reverse_sql=REVERSE)]
