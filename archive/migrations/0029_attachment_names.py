from django.db import migrations

# The words of files' names (the rowid: the attachment's id), so a plain word finds a message
# by one of its files' names without reading every name: contentless (the name lives once, in
# archive_attachment), with the messages' tokenizer, so "invoice-2024.pdf" holds the words
# invoice, 2024 and pdf. One index row per attachment, written by its insert's trigger.
FORWARD = [
    """
    CREATE VIRTUAL TABLE attachment_names USING fts5(
        name, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2'
    )
    """,
    "INSERT INTO attachment_names (rowid, name) SELECT id, file_name FROM archive_attachment",
    """
    CREATE TRIGGER attachment_names_ai AFTER INSERT ON archive_attachment BEGIN
        INSERT INTO attachment_names (rowid, name) VALUES (new.id, new.file_name);
    END
    """,
    """
    CREATE TRIGGER attachment_names_au AFTER UPDATE OF file_name ON archive_attachment BEGIN
        DELETE FROM attachment_names WHERE rowid = old.id;
        INSERT INTO attachment_names (rowid, name) VALUES (new.id, new.file_name);
    END
    """,
    """
    CREATE TRIGGER attachment_names_ad AFTER DELETE ON archive_attachment BEGIN
        DELETE FROM attachment_names WHERE rowid = old.id;
    END
    """,
]

REVERSE = [
    "DROP TRIGGER IF EXISTS attachment_names_ad",
    "DROP TRIGGER IF EXISTS attachment_names_au",
    "DROP TRIGGER IF EXISTS attachment_names_ai",
    "DROP TABLE IF EXISTS attachment_names",
]


class Migration(migrations.Migration):
    dependencies = [
        ("archive", "0028_attachment_text"),
    ]

    operations = [migrations.RunSQL(FORWARD, REVERSE)]
