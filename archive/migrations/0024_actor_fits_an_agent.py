"""An audit actor is "owner" or "agent:<name>", and an agent's name may be 100 characters:
tag and identity-link actors are widened from 64 to 120, as the task events' are.

State only. SQLite does not enforce a varchar's length, so the columns already hold any
length; the width is Django's validation. Altering the field for real would make Django
rebuild both tables, which the triggers on other tables naming them (a message's tags go
when it is purged) do not allow.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("archive", "0023_agent_limits"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name=model,
                    name="actor",
                    field=models.CharField(default="owner", max_length=120),
                )
                for model in ("identitylink", "tagging")
            ],
            database_operations=[],
        ),
    ]
