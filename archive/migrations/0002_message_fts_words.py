"""The words index: FTS5 over message text, case and diacritics folded, ranked with bm25.

External content (the text lives once, in archive_message); kept by triggers. Stems and the
typo vocabulary are separate tables the search work adds beside this one.
"""

from django.db import migrations

FORWARD = [
    """
    CREATE VIRTUAL TABLE message_fts USING fts5(
        text,
        content='archive_message',
        content_rowid='id',
        tokenize='unicode61 remove_diacritics 2'
    )
    """,
    """
    CREATE TRIGGER message_fts_ai AFTER INSERT ON archive_message BEGIN
        INSERT INTO message_fts(rowid, text) VALUES (new.id, new.text);
    END
    """,
    """
    CREATE TRIGGER message_fts_ad AFTER DELETE ON archive_message BEGIN
        INSERT INTO message_fts(message_fts, rowid, text) VALUES ('delete', old.id, old.text);
    END
    """,
    """
    CREATE TRIGGER message_fts_au AFTER UPDATE OF text ON archive_message BEGIN
        INSERT INTO message_fts(message_fts, rowid, text) VALUES ('delete', old.id, old.text);
        INSERT INTO message_fts(rowid, text) VALUES (new.id, new.text);
    END
    """,
    "INSERT INTO message_fts(message_fts) VALUES ('rebuild')",
]

REVERSE = [
    "DROP TRIGGER IF EXISTS message_fts_au",
    "DROP TRIGGER IF EXISTS message_fts_ad",
    "DROP TRIGGER IF EXISTS message_fts_ai",
    "DROP TABLE IF EXISTS message_fts",
]


class Migration(migrations.Migration):
    dependencies = [("archive", "0001_initial")]

    operations = [migrations.RunSQL(sql=FORWARD, reverse_sql=REVERSE)]
