"""The sender words: the words of people's names and of identities' display names, handles
and mail local parts, for `from:` by any word or word prefix (`from:ali`, `from:walker`).

Two small FTS5 tables folded as the words index folds (`unicode61 remove_diacritics 2`),
keyed by the row they describe: `search_identity_words` (rowid = the identity's id; columns
display_name, handle, address — the e-mail's part before the @) and `search_person_words`
(rowid = the person's id; name). A `from:` resolves its value here to identity ids before
any message is read. Kept by triggers: identities and people are few and rarely written
(the sink upserts an identity only when its name, handle or address changes).
"""

from django.db import migrations

_LOCAL = "CASE WHEN instr({0}, '@') > 0 THEN substr({0}, 1, instr({0}, '@') - 1) ELSE {0} END"
_IDENTITY = (
    "INSERT INTO search_identity_words(rowid, display_name, handle, address)"
    " VALUES (new.id, new.display_name, new.handle, " + _LOCAL.format("new.email") + ");"
)
_PERSON = "INSERT INTO search_person_words(rowid, name) VALUES (new.id, new.name);"

FORWARD = [
    """
    CREATE VIRTUAL TABLE search_identity_words USING fts5(
        display_name, handle, address, tokenize='unicode61 remove_diacritics 2'
    )
    """,
    """
    CREATE VIRTUAL TABLE search_person_words USING fts5(
        name, tokenize='unicode61 remove_diacritics 2'
    )
    """,
    f"""
    CREATE TRIGGER search_identity_words_ai AFTER INSERT ON archive_identity BEGIN
        {_IDENTITY}
    END
    """,
    f"""
    CREATE TRIGGER search_identity_words_au
    AFTER UPDATE OF display_name, handle, email ON archive_identity
    WHEN old.display_name IS NOT new.display_name OR old.handle IS NOT new.handle
        OR old.email IS NOT new.email
    BEGIN
        DELETE FROM search_identity_words WHERE rowid = old.id;
        {_IDENTITY}
    END
    """,
    """
    CREATE TRIGGER search_identity_words_ad AFTER DELETE ON archive_identity BEGIN
        DELETE FROM search_identity_words WHERE rowid = old.id;
    END
    """,
    f"""
    CREATE TRIGGER search_person_words_ai AFTER INSERT ON archive_person BEGIN
        {_PERSON}
    END
    """,
    f"""
    CREATE TRIGGER search_person_words_au AFTER UPDATE OF name ON archive_person
    WHEN old.name IS NOT new.name
    BEGIN
        DELETE FROM search_person_words WHERE rowid = old.id;
        {_PERSON}
    END
    """,
    """
    CREATE TRIGGER search_person_words_ad AFTER DELETE ON archive_person BEGIN
        DELETE FROM search_person_words WHERE rowid = old.id;
    END
    """,
    "INSERT INTO search_identity_words(rowid, display_name, handle, address)"
    " SELECT id, display_name, handle, " + _LOCAL.format("email") + " FROM archive_identity",
    "INSERT INTO search_person_words(rowid, name) SELECT id, name FROM archive_person",
]

REVERSE = [
    "DROP TRIGGER IF EXISTS search_person_words_ad",
    "DROP TRIGGER IF EXISTS search_person_words_au",
    "DROP TRIGGER IF EXISTS search_person_words_ai",
    "DROP TRIGGER IF EXISTS search_identity_words_ad",
    "DROP TRIGGER IF EXISTS search_identity_words_au",
    "DROP TRIGGER IF EXISTS search_identity_words_ai",
    "DROP TABLE IF EXISTS search_person_words",
    "DROP TABLE IF EXISTS search_identity_words",
]


class Migration(migrations.Migration):
    dependencies = [("archive", "0021_message_date_estimated")]

    operations = [migrations.RunSQL(sql=FORWARD, reverse_sql=REVERSE)]
