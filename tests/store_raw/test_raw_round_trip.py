"""Packed raw JSON through `wirecat export` and its re-import into a fresh store (a child
process with its own state folder): the export holds the text JSON, the fresh store packs
it with a dictionary of its own and reads back the same texts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from archive.store.raw import RAW_TRAIN_MIN
from archive.store.sink import batch_record
from tests.factories import batch
from tests.store_raw.test_raw_json import messages, read_back, stored

ROOT = Path(__file__).resolve().parents[2]
# What the fresh store holds: each message's raw JSON read by the ORM, and how many of the
# columns are frames.
PROBE = (
    "import json; from django.db import connection; from archive.store.models import Message;"
    " cursor = connection.cursor();"
    " cursor.execute(\"SELECT count(*) FROM archive_message WHERE typeof(raw_json) = 'blob'\");"
    " print(json.dumps([cursor.fetchone()[0],"
    " dict(Message.objects.values_list('external_id', 'raw_json'))]))"
)


def wirecat(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WIRECAT_STATE_DIR": str(state)}
    for name in ("WIRECAT_TEST_DB", "WIRECAT_DB", "DJANGO_SETTINGS_MODULE"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "wirecat", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.django_db(transaction=True)
def test_export_and_re_import_keep_every_raw_json(tmp_path: Path) -> None:
    records = messages(1, RAW_TRAIN_MIN + 150)
    batch_record(batch=batch(*records))
    assert {kind for kind, _v in stored().values()} == {"blob"}
    expected = read_back()

    dest = tmp_path / "export"
    call_command("export", str(dest), stdout=StringIO())
    lines = (dest / "messages.jsonl").read_text().splitlines()
    assert {line["external_id"]: line["raw_json"] for line in map(json.loads, lines)} == expected

    fresh = tmp_path / "fresh"
    for args in (("migrate", "-v0"), ("import", str(dest))):
        ran = wirecat(fresh, *args)
        assert ran.returncode == 0, ran.stderr[-3000:] + ran.stdout
    ran = wirecat(fresh, "shell", "-c", PROBE)
    assert ran.returncode == 0, ran.stderr[-3000:]
    frames, texts = json.loads(ran.stdout.strip().splitlines()[-1])
    assert texts == expected
    assert frames == len(records)

    again = wirecat(fresh, "import", str(dest))
    assert again.returncode == 0, again.stderr[-3000:]
    assert "messages added 0, updated 0" in again.stdout
