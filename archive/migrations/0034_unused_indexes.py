"""Two indexes of the attachments no query plan uses (tests/store_indexes/ proves a plan
for every index these tables keep): the one on `message_id`, which the unique
(message_id, external_id) serves as well as it did (a prefix of it), and the one on
`sha256`, which nothing looks an attachment up by. Together about 97 bytes an attachment
on disk, and two b-tree inserts fewer for each.

Only the indexes go: an AlterField would remake the attachments table, and with it drop
the triggers that queue its text for stems (migration 0028)."""

from django.db import migrations, models
from django.db.models import deletion

_DROPPED = {
    "archive_attachment_message_id_839391cb": "message_id",
    "archive_attachment_sha256_bae3e1f0": "sha256",
}


class Migration(migrations.Migration):
    dependencies = [
        ("archive", "0033_raw_dictionaries"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="attachment",
                    name="message",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=deletion.CASCADE,
                        related_name="attachments",
                        to="archive.message",
                    ),
                ),
                migrations.AlterField(
                    model_name="attachment",
                    name="sha256",
                    field=models.CharField(blank=True, max_length=64),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{name}"',
                    reverse_sql=f'CREATE INDEX "{name}" ON "archive_attachment" ("{column}")',
                )
                for name, column in _DROPPED.items()
            ],
        ),
    ]
