"""The notes' search indexes: words (bm25), stems (the messages' analyzer), substrings,
typo vocabulary.

- `note_words(title, body)`: the words of each note, rowid = the note's id, with the
  messages' tokenizer (`unicode61 remove_diacritics 2`), so a word is cut the same way in
  both searches. Contentless (the text lives once, in notes_note) with delete support, kept
  by triggers on insert, on update of the title or body, and on delete.
- `note_trigram(title, body)`: the same text for infixes and terms holding punctuation,
  with the messages' trigram tokenizer (`trigram remove_diacritics 1`, case folded), so
  `*cafe*` finds what it finds among messages; same rowids, same triggers.
- `note_stems(stems)`: the Snowball stems of a note's title and body (same rowid), made in
  Python by the messages' analyzer (`notes.search_index.note_stems_drain`) from the queue
  `notes_stem_queue` the triggers fill; `notes_search_state` records the analyzer the stems
  were made by, so a changed analyzer rebuilds them instead of mixing two.
- `note_words_vocab` reads the words index's vocabulary (for "did you mean").
- `notes_note_search_updated`: the notes by their last change, for dates and the
  newest-first order of a query with no word to rank by.
"""

from django.db import migrations

INDEXED = ("note_words", "note_trigram")
ADD = " ".join(
    f"INSERT INTO {table} (rowid, title, body) VALUES (new.id, new.title, new.body);"
    for table in INDEXED
)
REMOVE = " ".join(f"DELETE FROM {table} WHERE rowid = old.id;" for table in INDEXED)

FORWARD = [
    """
    CREATE VIRTUAL TABLE note_words USING fts5(
        title,
        body,
        content='',
        contentless_delete=1,
        tokenize='unicode61 remove_diacritics 2'
    )
    """,
    """
    CREATE VIRTUAL TABLE note_trigram USING fts5(
        title,
        body,
        content='',
        contentless_delete=1,
        tokenize='trigram remove_diacritics 1'
    )
    """,
    """
    CREATE VIRTUAL TABLE note_stems USING fts5(
        stems,
        content='',
        contentless_delete=1,
        tokenize='unicode61 remove_diacritics 2'
    )
    """,
    "CREATE TABLE notes_stem_queue (note_id INTEGER PRIMARY KEY)",
    """
    CREATE TABLE notes_search_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        stems_analyzer TEXT NOT NULL DEFAULT ''
    )
    """,
    "INSERT INTO notes_search_state (id, stems_analyzer) VALUES (1, '')",
    "CREATE VIRTUAL TABLE note_words_vocab USING fts5vocab('note_words', 'row')",
    # Dates (`before:`, `after:`, `on:`) and the newest-first order read the last change.
    "CREATE INDEX notes_note_search_updated ON notes_note (updated_at)",
    f"""
    CREATE TRIGGER notes_note_search_ai AFTER INSERT ON notes_note BEGIN
        {ADD}
        INSERT OR IGNORE INTO notes_stem_queue (note_id) VALUES (new.id);
    END
    """,
    f"""
    CREATE TRIGGER notes_note_search_ad AFTER DELETE ON notes_note BEGIN
        {REMOVE}
        INSERT OR IGNORE INTO notes_stem_queue (note_id) VALUES (old.id);
    END
    """,
    # Only a changed title or body: a save that moves a note, or bumps its revision alone,
    # leaves the indexes as they are.
    f"""
    CREATE TRIGGER notes_note_search_au AFTER UPDATE OF title, body ON notes_note
    WHEN old.title IS NOT new.title OR old.body IS NOT new.body BEGIN
        {REMOVE}
        {ADD}
        INSERT OR IGNORE INTO notes_stem_queue (note_id) VALUES (new.id);
    END
    """,
    # What is stored already.
    *(
        f"INSERT INTO {table} (rowid, title, body) SELECT id, title, body FROM notes_note"
        for table in INDEXED
    ),
    "INSERT INTO notes_stem_queue (note_id) SELECT id FROM notes_note",
]

REVERSE = [
    "DROP TRIGGER IF EXISTS notes_note_search_au",
    "DROP TRIGGER IF EXISTS notes_note_search_ad",
    "DROP TRIGGER IF EXISTS notes_note_search_ai",
    "DROP INDEX IF EXISTS notes_note_search_updated",
    "DROP TABLE IF EXISTS note_words_vocab",
    "DROP TABLE IF EXISTS notes_search_state",
    "DROP TABLE IF EXISTS notes_stem_queue",
    "DROP TABLE IF EXISTS note_stems",
    "DROP TABLE IF EXISTS note_trigram",
    "DROP TABLE IF EXISTS note_words",
]


class Migration(migrations.Migration):
    dependencies = [("notes", "0002_link_targets")]

    operations = [migrations.RunSQL(sql=FORWARD, reverse_sql=REVERSE)]
