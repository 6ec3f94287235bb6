"""Let the sink index a large batch of new messages set-wise.

FTS5 indexes rows inserted one by one (a trigger per row) about ten times slower than the
same rows inserted with one INSERT … SELECT. The insert triggers now skip their work while
`archive_fts_control.paused` is 1; the sink sets it only inside its own write transaction
(no other writer can see it: SQLite has one writer), inserts the batch, indexes it with one
statement per index, and clears the flag before committing. A crash rolls the flag back.
"""

from django.db import migrations

FORWARD = [
    """
    CREATE TABLE archive_fts_control (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        paused INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1))
    )
    """,
    "INSERT INTO archive_fts_control (id, paused) VALUES (1, 0)",
    "DROP TRIGGER message_fts_ai",
    """
    CREATE TRIGGER message_fts_ai AFTER INSERT ON archive_message
    WHEN (SELECT paused FROM archive_fts_control WHERE id = 1) = 0 BEGIN
        INSERT INTO message_fts(rowid, text) VALUES (new.id, new.text);
    END
    """,
    "DROP TRIGGER message_trigram_ai",
    """
    CREATE TRIGGER message_trigram_ai AFTER INSERT ON archive_message
    WHEN (SELECT paused FROM archive_fts_control WHERE id = 1) = 0 BEGIN
        INSERT INTO message_trigram(rowid, text) VALUES (new.id, new.text);
    END
    """,
]

REVERSE = [
    "DROP TRIGGER message_trigram_ai",
    """
    CREATE TRIGGER message_trigram_ai AFTER INSERT ON archive_message BEGIN
        INSERT INTO message_trigram(rowid, text) VALUES (new.id, new.text);
    END
    """,
    "DROP TRIGGER message_fts_ai",
    """
    CREATE TRIGGER message_fts_ai AFTER INSERT ON archive_message BEGIN
        INSERT INTO message_fts(rowid, text) VALUES (new.id, new.text);
    END
    """,
    "DROP TABLE archive_fts_control",
]


class Migration(migrations.Migration):
    dependencies = [("archive", "0005_message_reply_waiting_index")]

    operations = [migrations.RunSQL(sql=FORWARD, reverse_sql=REVERSE)]
