"""A transcript's recording: the stored attachment it was made from (null when none is
stored), so that the meeting page can play it from a line's second."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("archive", "0026_importjob_meeting_files"),
        ("meetings", "0002_meeting_search"),
    ]

    operations = [
        migrations.AddField(
            model_name="transcript",
            name="recording",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="archive.attachment",
            ),
        ),
    ]
