"""What is deleted leaves its links behind, unresolved, never gone.

When a target of a link is deleted (a message purged, a chat, a person, a meeting, a task,
an attachment or a note), each link to it keeps what it was written as and loses its target:
a bare name (`[[Alice]]`) waits for a name again (kind ""), a typed reference
(`message:msg_…`) stays of its kind, unresolved. Links that start at the deleted thing go
with it, and a deleted note's taggings go with the note (as migration archive 0014 does for
chats, people and messages).
"""

from django.db import migrations

TARGETS = {
    "note": "notes_note",
    "message": "archive_message",
    "chat": "archive_chat",
    "person": "archive_person",
    "meeting": "meetings_meeting",
    "task": "tasks_task",
    "attachment": "archive_attachment",
}


def _trigger(kind: str, table: str) -> str:
    extra = (
        " DELETE FROM archive_tagging WHERE target_kind = 'note' AND target_id = old.id;"
        if kind == "note"
        else ""
    )
    return (
        f"CREATE TRIGGER notes_link_{kind}_gone AFTER DELETE ON {table} BEGIN"
        " UPDATE notes_link SET target_id = NULL,"
        " target_kind = CASE WHEN target_folded <> '' THEN '' ELSE target_kind END"
        f" WHERE target_kind = '{kind}' AND target_id = old.id;"
        f" DELETE FROM notes_link WHERE source_kind = '{kind}' AND source_id = old.id;"
        f"{extra} END"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("notes", "0001_notes"),
        ("archive", "0027_note_tag_target"),
        ("meetings", "0003_transcript_recording"),
        ("tasks", "0001_initial"),
    ]

    operations = [
        migrations.RunSQL(
            [_trigger(kind, table) for kind, table in TARGETS.items()],
            [f"DROP TRIGGER IF EXISTS notes_link_{kind}_gone" for kind in TARGETS],
        )
    ]
