"""Vectors: the model rows, their vec0 tables, writing and forgetting vectors.

A model's vectors live in a sqlite-vec table of their own (`VectorModel.vec_table`), made
when the model is first used. When the setting names another model, `models_retire` drops
the other models' rows and tables: the index is rebuilt by the new model, never mixed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

import numpy as np
from django.db import connection, transaction

from archive.meaning.model import ModelSpec
from archive.meaning.models import Vector, VectorModel


def vec_table_make(model: VectorModel) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {model.vec_table} USING vec0("
            f"kind integer partition key, embedding float[{int(model.dims)}]"
            " distance_metric=cosine)"
        )


def model_row(spec: ModelSpec) -> VectorModel:
    """The row of `spec`'s model, made (with its vec table) the first time."""
    with transaction.atomic():
        found, made = VectorModel.objects.get_or_create(
            name=spec.name, defaults={"dims": spec.dims, "created_at": datetime.now(UTC)}
        )
        if made:
            # A table left by a model row deleted without it (a store emptied by SQL)
            # would hold another model's numbers under this id.
            with connection.cursor() as cursor:
                cursor.execute(f"DROP TABLE IF EXISTS {found.vec_table}")
        vec_table_make(found)
    return found


def model_drop(model: VectorModel) -> None:
    """Drop a model's vectors, its vec table and its row, in one transaction."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {model.vec_table}")
        model.delete()


def models_retire(keep: str) -> list[str]:
    """Drop every model's vectors but `keep`'s (a changed setting): their names."""
    gone = list(VectorModel.objects.exclude(name=keep))
    for model in gone:
        model_drop(model)
    return [model.name for model in gone]


def vectors_write(
    model: VectorModel, keyed: Sequence[tuple[int, bytes]], numbers: np.ndarray
) -> int:
    """Store one vector per (kind, sha) of `keyed`, row for row of `numbers`, in one
    transaction; a key stored meanwhile (another refresh) is left as it is."""
    made = 0
    now = datetime.now(UTC)
    with transaction.atomic(), connection.cursor() as cursor:
        for (kind, sha), row in zip(keyed, numbers, strict=True):
            cursor.execute(
                "INSERT INTO archive_vector (model_id, kind, sha, made_at) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (model_id, kind, sha) DO NOTHING RETURNING id",
                [model.pk, kind, sha, now],
            )
            got = cursor.fetchone()
            if got is None:
                continue
            cursor.execute(
                f"INSERT INTO {model.vec_table} (rowid, kind, embedding) VALUES (%s, %s, %s)",
                [got[0], kind, np.asarray(row, dtype=np.float32).tobytes()],
            )
            made += 1
    return made


def vectors_forget(keys: Iterable[tuple[int, bytes]]) -> int:
    """Delete the vectors of these (kind, sha) keys, by every model (in the caller's
    transaction)."""
    wanted = {(int(kind), bytes(sha)) for kind, sha in keys}
    if not wanted:
        return 0
    gone = 0
    models = {m.pk: m for m in VectorModel.objects.all()}
    for kind in {k for k, _ in wanted}:
        shas = [sha for k, sha in wanted if k == kind]
        for start in range(0, len(shas), 400):
            rows = list(
                Vector.objects.filter(kind=kind, sha__in=shas[start : start + 400]).values_list(
                    "id", "model_id"
                )
            )
            with connection.cursor() as cursor:
                for model_id in {m for _, m in rows}:
                    ids = [pk for pk, m in rows if m == model_id]
                    marks = ",".join("%s" for _ in ids)
                    cursor.execute(
                        f"DELETE FROM {models[model_id].vec_table} WHERE rowid IN ({marks})", ids
                    )
            gone += Vector.objects.filter(pk__in=[pk for pk, _ in rows]).delete()[0]
    return gone


def orphans_forget(model: VectorModel, most: int) -> int:
    """Delete up to `most` of `model`'s vectors no chunk has the text of any more (their
    sources changed or went)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT v.kind, v.sha FROM archive_vector AS v WHERE v.model_id = %s AND NOT EXISTS"
            " (SELECT 1 FROM archive_chunk AS c WHERE c.kind = v.kind AND c.sha = v.sha)"
            " LIMIT %s",
            [model.pk, most],
        )
        keys = [(int(kind), bytes(sha)) for kind, sha in cursor.fetchall()]
    with transaction.atomic():
        return vectors_forget(keys)
