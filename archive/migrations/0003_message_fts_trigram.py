"""The trigram index: FTS5 substring search over message text (code, URLs, parts of words)."""

from django.db import migrations

FORWARD = [
    """
    CREATE VIRTUAL TABLE message_trigram USING fts5(
        text,
        content='archive_message',
        content_rowid='id',
        tokenize='trigram remove_diacritics 1'
    )
    """,
    """
    CREATE TRIGGER message_trigram_ai AFTER INSERT ON archive_message BEGIN
        INSERT INTO message_trigram(rowid, text) VALUES (new.id, new.text);
    END
    """,
    """
    CREATE TRIGGER message_trigram_ad AFTER DELETE ON archive_message BEGIN
        INSERT INTO message_trigram(message_trigram, rowid, text)
        VALUES ('delete', old.id, old.text);
    END
    """,
    """
    CREATE TRIGGER message_trigram_au AFTER UPDATE OF text ON archive_message BEGIN
        INSERT INTO message_trigram(message_trigram, rowid, text)
        VALUES ('delete', old.id, old.text);
        INSERT INTO message_trigram(rowid, text) VALUES (new.id, new.text);
    END
    """,
    "INSERT INTO message_trigram(message_trigram) VALUES ('rebuild')",
]

REVERSE = [
    "DROP TRIGGER IF EXISTS message_trigram_au",
    "DROP TRIGGER IF EXISTS message_trigram_ad",
    "DROP TRIGGER IF EXISTS message_trigram_ai",
    "DROP TABLE IF EXISTS message_trigram",
]


class Migration(migrations.Migration):
    dependencies = [("archive", "0002_message_fts_words")]

    operations = [migrations.RunSQL(sql=FORWARD, reverse_sql=REVERSE)]
