"""The owner is a person from the start (`Person.is_owner`, at most one), holding the owner's
own identities: each account's owner identity and whoever sent the messages the owner sent
(direction "out"). Linked here for stores made before, as the sink links them on every batch
since (`archive.people.services.owner_identities_link`), each link an audit row by "system".
An identity anyone linked or unlinked by hand before is left as it is.

Also the admin's plurals: "people", "saved searches", "webhook deliveries", "tag-all runs"
(state only: Django keeps verbose names in the migration state, the database never sees them).

Plain ADD COLUMN (as in 0016 and 0021): Django would remake archive_person on SQLite,
dropping the triggers made by raw SQL on it (its taggings' cleanup, 0014; the sender words
index, 0022). The one-owner rule is a partial unique index, which needs no remake.
"""

from collections import Counter
from typing import Any

from django.db import migrations, models
from django.utils import timezone


def owner_identities_link(apps: Any, schema_editor: Any) -> None:
    Account = apps.get_model("archive", "Account")
    Identity = apps.get_model("archive", "Identity")
    IdentityLink = apps.get_model("archive", "IdentityLink")
    Message = apps.get_model("archive", "Message")
    Person = apps.get_model("archive", "Person")
    accounts = set(
        Account.objects.exclude(owner_identity=None).values_list("owner_identity_id", flat=True)
    )
    ids = accounts | set(
        Message.objects.filter(direction="out")
        .exclude(sender=None)
        .values_list("sender_id", flat=True)
        .distinct()
    )
    if not ids:
        return
    # The accounts' own identities first: the owner person is named after one of them.
    candidates = sorted(
        Identity.objects.filter(pk__in=ids), key=lambda i: (i.pk not in accounts, i.pk)
    )
    touched = set(
        IdentityLink.objects.filter(identity_id__in=ids).values_list("identity_id", flat=True)
    )
    loose = [i for i in candidates if i.person_id is None and i.pk not in touched]
    owner = Person.objects.filter(is_owner=True).first()
    held = Counter(i.person_id for i in candidates if i.person_id is not None)
    if owner is None and held:  # the person the owner made of themselves by hand
        owner = Person.objects.get(pk=held.most_common(1)[0][0])
        owner.is_owner = True
        owner.save(update_fields=["is_owner"])
    if not loose:
        return
    if owner is None:
        named = next(
            (i.display_name or i.handle for i in candidates if i.display_name or i.handle), ""
        )
        owner = Person.objects.create(name=" ".join(named.split())[:200] or "You", is_owner=True)
    Identity.objects.filter(pk__in=[i.pk for i in loose]).update(
        person=owner, updated_at=timezone.now()
    )
    IdentityLink.objects.bulk_create(
        IdentityLink(
            identity_id=i.pk, person=owner, person_name=owner.name, action="link", actor="system"
        )
        for i in loose
    )


class Migration(migrations.Migration):
    dependencies = [("archive", "0024_actor_fits_an_agent")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE archive_person ADD COLUMN is_owner bool NOT NULL DEFAULT 0",
                    "ALTER TABLE archive_person DROP COLUMN is_owner",
                ),
            ],
            state_operations=[
                migrations.AddField(
                    model_name="person",
                    name="is_owner",
                    field=models.BooleanField(default=False),
                ),
            ],
        ),
        migrations.AddConstraint(
            model_name="person",
            constraint=models.UniqueConstraint(
                condition=models.Q(("is_owner", True)),
                fields=("is_owner",),
                name="person_one_owner",
            ),
        ),
        migrations.AlterModelOptions(
            name="person",
            options={"ordering": ["name"], "verbose_name_plural": "people"},
        ),
        migrations.AlterModelOptions(
            name="savedsearch",
            options={"ordering": ("-last_run_at",), "verbose_name_plural": "saved searches"},
        ),
        migrations.AlterModelOptions(
            name="tagbulk",
            options={"ordering": ("-created_at", "-id"), "verbose_name": "tag-all run"},
        ),
        migrations.AlterModelOptions(
            name="webhookdelivery",
            options={"ordering": ("-id",), "verbose_name_plural": "webhook deliveries"},
        ),
        migrations.RunPython(owner_identities_link, migrations.RunPython.noop, elidable=False),
    ]
