"""Edits and tombstones reach the changes feed from Python, like every other change.

Migration 0015 made two triggers write "message.edited" and "message.tombstoned" rows from
the UPDATE that makes them. A trigger cannot know what the writer knows: that an import or
a repair pass is rewriting history (quiet: in the feed, told to no webhook), so an edit a
re-import found still reached the webhooks. The sink is the only writer of message rows
(the models refuse any other, a test scans the code), so it records these changes itself,
set-wise per batch, through `archive.store.changes` — the one module that writes the feed.
"""

from django.db import migrations

FORWARD = [
    "DROP TRIGGER IF EXISTS change_message_edited",
    "DROP TRIGGER IF EXISTS change_message_tombstoned",
]

REVERSE = [
    "CREATE TRIGGER change_message_edited AFTER UPDATE OF text ON archive_message"
    " WHEN old.text IS NOT new.text BEGIN"
    " INSERT INTO archive_change (kind, message_pk, chat_pk, tag, target_kind, at, quiet)"
    " VALUES ('message.edited', new.id, new.chat_id, '', '',"
    " strftime('%Y-%m-%d %H:%M:%f', 'now'), 0); END",
    "CREATE TRIGGER change_message_tombstoned AFTER UPDATE OF deleted_at ON"
    " archive_message WHEN old.deleted_at IS NULL AND new.deleted_at IS NOT NULL BEGIN"
    " INSERT INTO archive_change (kind, message_pk, chat_pk, tag, target_kind, at, quiet)"
    " VALUES ('message.tombstoned', new.id, new.chat_id, '', '',"
    " strftime('%Y-%m-%d %H:%M:%f', 'now'), 0); END",
]


class Migration(migrations.Migration):
    dependencies = [("archive", "0019_syncrun_deleted")]

    operations = [migrations.RunSQL(FORWARD, REVERSE)]
