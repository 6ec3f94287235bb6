"""Drop the single-column indexes of Message.account, .chat and .sender: the unique
(account, chat, external_id), (chat, sent_at, id) and (sender, sent_at) indexes start with
those columns and serve every lookup, and each extra b-tree slows every insert.

Django would remake the whole table on SQLite to change `db_index` (dropping the FTS
triggers on it with the old table), so the database side is three DROP INDEX statements."""

import django.db.models.deletion
from django.db import migrations, models

INDEXES = {
    "archive_message_account_id_1a165878": "account_id",
    "archive_message_chat_id_0fdd80a6": "chat_id",
    "archive_message_sender_id_caa9a996": "sender_id",
}


class Migration(migrations.Migration):
    dependencies = [
        ("archive", "0012_saved_search"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{name}"',
                    f'CREATE INDEX IF NOT EXISTS "{name}" ON "archive_message" ("{column}")',
                )
                for name, column in INDEXES.items()
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="message",
                    name="account",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="messages",
                        to="archive.account",
                    ),
                ),
                migrations.AlterField(
                    model_name="message",
                    name="chat",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="messages",
                        to="archive.chat",
                    ),
                ),
                migrations.AlterField(
                    model_name="message",
                    name="sender",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="messages",
                        to="archive.identity",
                    ),
                ),
            ],
        ),
    ]
