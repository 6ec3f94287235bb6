"""Raw provider JSON stored compressed: the dictionaries' table, and `Message.raw_json`
becomes a field that unpacks what it reads. The column stays the same TEXT column (SQLite
keeps a BLOB in it as it is), so only Django's state changes: an AlterField would rebuild
the message table, minutes for a million rows."""

from django.db import migrations, models

import archive.store.raw


class Migration(migrations.Migration):
    dependencies = [
        ("archive", "0032_backup_runs"),
    ]

    operations = [
        migrations.CreateModel(
            name="RawDictionary",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("provider", models.CharField(max_length=32)),
                ("dict_id", models.BigIntegerField(unique=True)),
                ("data", models.BinaryField()),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="message",
                    name="raw_json",
                    field=archive.store.raw.PackedJsonTextField(blank=True),
                ),
            ],
        ),
    ]
