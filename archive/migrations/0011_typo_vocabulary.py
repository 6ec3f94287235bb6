"""The typo vocabulary: the words index's terms with their trigrams, for "did you mean".

`message_fts_vocab` reads the words index's own vocabulary (fts5vocab); `search_terms` holds
a snapshot of it (terms of three letters or more, with how many messages hold each) under a
trigram index, so the terms closest to a misspelt word are found without scanning them all.
`archive.services.search_index.vocabulary_refresh` rebuilds the snapshot.
"""

from django.db import migrations, models

FORWARD = [
    "CREATE VIRTUAL TABLE message_fts_vocab USING fts5vocab('message_fts', 'row')",
    """
    CREATE VIRTUAL TABLE search_terms USING fts5(
        term,
        docs UNINDEXED,
        tokenize='trigram'
    )
    """,
]

REVERSE = [
    "DROP TABLE IF EXISTS search_terms",
    "DROP TABLE IF EXISTS message_fts_vocab",
]


class Migration(migrations.Migration):
    dependencies = [("archive", "0010_message_stems")]

    operations = [
        migrations.RunSQL(sql=FORWARD, reverse_sql=REVERSE),
        migrations.AddField(
            model_name="searchconfig",
            name="vocabulary_through",
            field=models.IntegerField(default=0, editable=False),
        ),
    ]
