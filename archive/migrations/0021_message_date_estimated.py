"""A message whose export gave no usable date is kept with the best evidence there was, and
says so (`Message.date_estimated`); an import counts them (`ImportJob.estimated`).

Plain ADD COLUMN (as in 0016): Django would remake archive_message on SQLite, copying every
row and dropping the full-text and changes triggers made by raw SQL with the old table.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("archive", "0020_changes_written_by_the_store")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE archive_message ADD COLUMN date_estimated bool NOT NULL DEFAULT 0",
                    "ALTER TABLE archive_message DROP COLUMN date_estimated",
                ),
                migrations.RunSQL(
                    "ALTER TABLE archive_importjob ADD COLUMN estimated integer unsigned"
                    " NOT NULL DEFAULT 0 CHECK (estimated >= 0)",
                    "ALTER TABLE archive_importjob DROP COLUMN estimated",
                ),
            ],
            state_operations=[
                migrations.AddField(
                    model_name="message",
                    name="date_estimated",
                    field=models.BooleanField(default=False),
                ),
                migrations.AddField(
                    model_name="importjob",
                    name="estimated",
                    field=models.PositiveIntegerField(default=0),
                ),
            ],
        ),
    ]
