"""Agents limited to accounts and chats (`Agent.limit_accounts`, `Agent.limit_chats`): two
new link tables, nothing else touched (archive_agent keeps its rows as they are). An agent
with neither sees and sends to every chat, as before."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("archive", "0022_sender_words")]

    operations = [
        migrations.AddField(
            model_name="agent",
            name="limit_accounts",
            field=models.ManyToManyField(
                blank=True,
                help_text="the agent sees and sends to these accounts' chats (none: no account limit)",
                related_name="+",
                to="archive.account",
                verbose_name="limited to accounts",
            ),
        ),
        migrations.AddField(
            model_name="agent",
            name="limit_chats",
            field=models.ManyToManyField(
                blank=True,
                help_text="and to these chats (no accounts and no chats: every chat)",
                related_name="+",
                to="archive.chat",
                verbose_name="limited to chats",
            ),
        ),
    ]
