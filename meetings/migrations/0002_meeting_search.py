"""The meetings' search indexes: words (bm25), stems (the messages' analyzer), typo vocabulary.

One words index, `meeting_words`, holds both kinds of document, so that one MATCH ranks a
transcript line and a meeting's title against each other with one bm25 (two tables would
score each against its own statistics, and a search would read two indexes per term):

- a transcript segment: rowid = 2 * segment id, `title` empty, `body` the segment's text;
- a meeting: rowid = 2 * meeting id + 1, `title` its title, `body` its description.

The parity of the rowid is the kind (a contentless table keeps no column values to read a
kind from). Contentless (`content=''`, the text lives once, in its own table) with delete
support, kept by triggers on insert, update and delete of both tables.

`meeting_stems` holds the Snowball stems of the same documents (same rowids), made in Python
by the messages' analyzer (`meetings.search_index.meeting_stems_drain`) from the queue
`meetings_stem_queue` the triggers fill; `meetings_search_state` records the analyzer the
stems were made by, so a changed analyzer rebuilds them instead of mixing two.
`meeting_words_vocab` reads the words index's vocabulary (for "did you mean").
"""

from django.db import migrations

SEGMENT = "new.id * 2"
MEETING = "new.id * 2 + 1"

FORWARD = [
    """
    CREATE VIRTUAL TABLE meeting_words USING fts5(
        title,
        body,
        content='',
        contentless_delete=1,
        tokenize='unicode61 remove_diacritics 2'
    )
    """,
    """
    CREATE VIRTUAL TABLE meeting_stems USING fts5(
        stems,
        content='',
        contentless_delete=1,
        tokenize='unicode61 remove_diacritics 2'
    )
    """,
    "CREATE TABLE meetings_stem_queue (doc INTEGER PRIMARY KEY)",
    """
    CREATE TABLE meetings_search_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        stems_analyzer TEXT NOT NULL DEFAULT ''
    )
    """,
    "INSERT INTO meetings_search_state (id, stems_analyzer) VALUES (1, '')",
    "CREATE VIRTUAL TABLE meeting_words_vocab USING fts5vocab('meeting_words', 'row')",
    # Transcript segments.
    f"""
    CREATE TRIGGER meetings_segment_ai AFTER INSERT ON meetings_segment BEGIN
        INSERT INTO meeting_words (rowid, title, body) VALUES ({SEGMENT}, '', new.text);
        INSERT OR IGNORE INTO meetings_stem_queue (doc) VALUES ({SEGMENT});
    END
    """,
    """
    CREATE TRIGGER meetings_segment_ad AFTER DELETE ON meetings_segment BEGIN
        DELETE FROM meeting_words WHERE rowid = old.id * 2;
        INSERT OR IGNORE INTO meetings_stem_queue (doc) VALUES (old.id * 2);
    END
    """,
    f"""
    CREATE TRIGGER meetings_segment_au AFTER UPDATE OF text ON meetings_segment BEGIN
        DELETE FROM meeting_words WHERE rowid = old.id * 2;
        INSERT INTO meeting_words (rowid, title, body) VALUES ({SEGMENT}, '', new.text);
        INSERT OR IGNORE INTO meetings_stem_queue (doc) VALUES ({SEGMENT});
    END
    """,
    # Meetings: title and description.
    f"""
    CREATE TRIGGER meetings_meeting_ai AFTER INSERT ON meetings_meeting BEGIN
        INSERT INTO meeting_words (rowid, title, body)
        VALUES ({MEETING}, new.title, new.description);
        INSERT OR IGNORE INTO meetings_stem_queue (doc) VALUES ({MEETING});
    END
    """,
    """
    CREATE TRIGGER meetings_meeting_ad AFTER DELETE ON meetings_meeting BEGIN
        DELETE FROM meeting_words WHERE rowid = old.id * 2 + 1;
        INSERT OR IGNORE INTO meetings_stem_queue (doc) VALUES (old.id * 2 + 1);
    END
    """,
    f"""
    CREATE TRIGGER meetings_meeting_au AFTER UPDATE OF title, description ON meetings_meeting
    BEGIN
        DELETE FROM meeting_words WHERE rowid = old.id * 2 + 1;
        INSERT INTO meeting_words (rowid, title, body)
        VALUES ({MEETING}, new.title, new.description);
        INSERT OR IGNORE INTO meetings_stem_queue (doc) VALUES ({MEETING});
    END
    """,
    # What is stored already.
    "INSERT INTO meeting_words (rowid, title, body) SELECT id * 2, '', text FROM meetings_segment",
    """
    INSERT INTO meeting_words (rowid, title, body)
    SELECT id * 2 + 1, title, description FROM meetings_meeting
    """,
    "INSERT INTO meetings_stem_queue (doc) SELECT id * 2 FROM meetings_segment",
    "INSERT INTO meetings_stem_queue (doc) SELECT id * 2 + 1 FROM meetings_meeting",
]

REVERSE = [
    "DROP TRIGGER IF EXISTS meetings_meeting_au",
    "DROP TRIGGER IF EXISTS meetings_meeting_ad",
    "DROP TRIGGER IF EXISTS meetings_meeting_ai",
    "DROP TRIGGER IF EXISTS meetings_segment_au",
    "DROP TRIGGER IF EXISTS meetings_segment_ad",
    "DROP TRIGGER IF EXISTS meetings_segment_ai",
    "DROP TABLE IF EXISTS meeting_words_vocab",
    "DROP TABLE IF EXISTS meetings_search_state",
    "DROP TABLE IF EXISTS meetings_stem_queue",
    "DROP TABLE IF EXISTS meeting_stems",
    "DROP TABLE IF EXISTS meeting_words",
]


class Migration(migrations.Migration):
    dependencies = [("meetings", "0001_meetings")]

    operations = [migrations.RunSQL(sql=FORWARD, reverse_sql=REVERSE)]
