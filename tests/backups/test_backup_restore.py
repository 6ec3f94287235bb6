"""`wirecat backup` and `wirecat restore` on a real store: the round trip keeps every count
and every search answer; a damaged or hostile archive, or a folder that holds a store, is
refused with what and where, and leaves nothing behind."""

from __future__ import annotations

import errno
import gzip
import io
import json
import tarfile
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from archive.backups.models import BackupRun
from archive.backups.services import backup as backup_service
from archive.backups.services.backup import backup_make
from archive.backups.services.restore import RestoreRefused, backup_restore
from tests.backups.support import counts_of, django_on, live_store, search_answers, store_fill

pytestmark = pytest.mark.django_db(transaction=True)


def _members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar}  # type: ignore[union-attr]


def _rewrite(archive: Path, target: Path, change: dict[str, bytes | None]) -> Path:
    """`archive` with some members' bytes changed (None: dropped), as a new archive."""
    members = _members(archive)
    with tarfile.open(target, "w:gz") as tar:
        for name, data in members.items():
            changed = change.get(name, data)
            if changed is None:
                continue
            info = tarfile.TarInfo(name)
            info.size = len(changed)
            tar.addfile(info, io.BytesIO(changed))
    return target


def _nothing_restored(state: Path) -> None:
    left = sorted(p.name for p in state.iterdir()) if state.exists() else []
    assert left == [], f"a refused restore left {left}"


def test_round_trip_keeps_counts_blobs_and_search_answers(tmp_path: Path) -> None:
    files = store_fill()
    answers = search_answers()
    assert answers["fox"] and answers["boiler OR plumber"] and answers["from:bob dog"]
    live_counts = counts_of(live_store())

    out = StringIO()
    call_command("backup", str(tmp_path / "out"), stdout=out)
    archives = list((tmp_path / "out").iterdir())
    assert len(archives) == 1 and archives[0].name.startswith("wirecat-backup-")
    assert "2 blobs" in out.getvalue() and "5 messages" in out.getvalue()
    members = _members(archives[0])
    assert next(iter(members)) == "wirecat.db" and list(members)[-1] == "manifest.json"
    assert not any(name.startswith("keys/") for name in members), "keys only when asked"
    manifest = json.loads(members["manifest.json"])
    assert manifest["counts"] == {**live_counts, "blobs": 2}
    assert live_counts["messages"] == 5 and live_counts["notes"] == 2
    assert manifest["schema"]["archive"] == "0034_unused_indexes"
    assert {p["name"] for p in manifest["parts"]} == set(members) - {"manifest.json"}
    run = BackupRun.objects.get()
    assert run.ok and run.size == archives[0].stat().st_size and run.path == str(archives[0])

    state = tmp_path / "restored"
    out = StringIO()
    call_command("restore", str(archives[0]), "--state", str(state), stdout=out)
    assert f"into {state}" in out.getvalue()
    assert sorted(p.name for p in state.iterdir()) == ["blobs", "wirecat.db"]
    assert counts_of(state / "wirecat.db") == live_counts
    restored_files = sorted(p.read_bytes() for p in (state / "blobs").rglob("*") if p.is_file())
    assert restored_files == sorted(files)
    with django_on(state / "wirecat.db"):
        assert search_answers() == answers


def test_keys_only_when_asked(tmp_path: Path, settings: object) -> None:
    store_fill()
    state = Path(settings.STATE_DIR)  # type: ignore[attr-defined]
    (state / "credentials.key").write_bytes(b"k" * 44)
    (state / "secret_key").write_text("s" * 50)
    made = backup_make(tmp_path / "out", with_keys=True)
    members = _members(made.path)
    assert members["keys/credentials.key"] == b"k" * 44
    restored = tmp_path / "restored"
    backup_restore(made.path, restored)
    assert (restored / "credentials.key").read_bytes() == b"k" * 44
    assert (restored / "secret_key").read_text() == "s" * 50
    assert (restored / "credentials.key").stat().st_mode & 0o777 == 0o600


def test_a_changed_byte_is_refused_naming_the_part(tmp_path: Path) -> None:
    store_fill()
    made = backup_make(tmp_path / "out")
    members = _members(made.path)
    blob = next(name for name in members if name.startswith("blobs/"))
    damaged = bytearray(members[blob])
    damaged[len(damaged) // 2] ^= 0x01
    tampered = _rewrite(made.path, tmp_path / "tampered.tar.gz", {blob: bytes(damaged)})
    state = tmp_path / "restored"
    with pytest.raises(CommandError, match=f"part {blob} is damaged"):
        call_command("restore", str(tampered), "--state", str(state))
    _nothing_restored(state)

    store = bytearray(members["wirecat.db"])
    store[len(store) // 2] ^= 0xFF
    tampered = _rewrite(made.path, tmp_path / "tampered2.tar.gz", {"wirecat.db": bytes(store)})
    with pytest.raises(RestoreRefused, match=r"part wirecat\.db is damaged"):
        backup_restore(tampered, state)
    _nothing_restored(state)

    missing = _rewrite(made.path, tmp_path / "missing.tar.gz", {blob: None})
    with pytest.raises(RestoreRefused, match=f"part {blob} is in the manifest but not"):
        backup_restore(missing, state)
    _nothing_restored(state)


def test_a_damaged_file_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    store_fill()
    made = backup_make(tmp_path / "out")
    raw = bytearray(made.path.read_bytes())
    raw[len(raw) // 3] ^= 0x55
    damaged = tmp_path / "damaged.tar.gz"
    damaged.write_bytes(bytes(raw))
    state = tmp_path / "restored"
    with pytest.raises(RestoreRefused):
        backup_restore(damaged, state)
    _nothing_restored(state)
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(bytes(made.path.read_bytes()[: len(raw) // 2]))
    with pytest.raises(RestoreRefused, match=r"damaged|manifest"):
        backup_restore(cut, state)
    _nothing_restored(state)


def _hostile(path: Path, member: tarfile.TarInfo, data: bytes = b"x") -> Path:
    with gzip.open(path, "wb") as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        member.size = len(data) if member.isreg() else 0
        tar.addfile(member, io.BytesIO(data) if member.isreg() else None)
    return path


@pytest.mark.parametrize(
    ("name", "kind", "says"),
    [
        ("../escaped", tarfile.REGTYPE, "no part of a WireCat backup"),
        ("/etc/absolute", tarfile.REGTYPE, "no part of a WireCat backup"),
        ("blobs/../../escaped", tarfile.REGTYPE, "no part of a WireCat backup"),
        ("wirecat.db", tarfile.SYMTYPE, "is a link"),
        ("wirecat.db", tarfile.LNKTYPE, "is a link"),
        ("blobs", tarfile.DIRTYPE, "not a plain file"),
        ("settings.py", tarfile.REGTYPE, "no part of a WireCat backup"),
    ],
)
def test_a_hostile_archive_writes_nothing_outside(
    tmp_path: Path, name: str, kind: bytes, says: str
) -> None:
    member = tarfile.TarInfo(name)
    member.type = kind
    member.linkname = "/etc/passwd" if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE) else ""
    case = tmp_path / "case"
    case.mkdir()
    archive = _hostile(case / "hostile.tar.gz", member)
    with pytest.raises(RestoreRefused, match=says):
        backup_restore(archive, case / "restored")
    assert sorted(p.name for p in case.iterdir()) == ["hostile.tar.gz"]
    assert not (tmp_path / "escaped").exists() and not Path("/etc/absolute").exists()


def test_a_huge_member_is_refused_before_it_is_written(tmp_path: Path) -> None:
    member = tarfile.TarInfo("wirecat.db")
    member.size = 1 << 60  # declared, never sent
    archive = tmp_path / "huge.tar.gz"
    with gzip.open(archive, "wb") as gz:
        gz.write(member.tobuf(tarfile.PAX_FORMAT))
    with pytest.raises(RestoreRefused, match=r"part wirecat\.db needs"):
        backup_restore(archive, tmp_path / "restored")
    _nothing_restored(tmp_path / "restored")


def test_restore_refuses_a_folder_that_holds_a_store(tmp_path: Path) -> None:
    store_fill()
    made = backup_make(tmp_path / "out")
    state = tmp_path / "target"
    backup_restore(made.path, state)
    before = (state / "wirecat.db").read_bytes()
    with pytest.raises(CommandError, match=f"{state} already holds a store"):
        call_command("restore", str(made.path), "--state", str(state))
    assert (state / "wirecat.db").read_bytes() == before

    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(RestoreRefused, match=r"not empty \(it holds notes.txt\)"):
        backup_restore(made.path, other)
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]

    started = tmp_path / "started"  # what a first start of WireCat leaves: still empty
    (started / "uploads").mkdir(parents=True)
    (started / "secret_key").write_text("fresh")
    (started / "backups").mkdir()  # and the backups, restored from in place
    kept = made.path.rename(started / "backups" / made.path.name)
    backup_restore(kept, started)
    assert (started / "wirecat.db").is_file() and kept.is_file()


def test_restore_refuses_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="no such backup file"):
        call_command("restore", str(tmp_path / "nope.tar.gz"), "--state", str(tmp_path / "s"))


def test_a_failed_backup_is_recorded_and_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_fill()
    in_the_way = tmp_path / "not-a-folder"
    in_the_way.write_text("x")
    with pytest.raises(CommandError, match="it is a file, not a folder"):
        call_command("backup", str(in_the_way))
    run = BackupRun.objects.get()
    assert not run.ok and run.finished_at is not None and str(in_the_way) in run.error

    # The disk fills while the archive is written: no archive, not even a partial one.
    real = backup_service._part_add
    calls = []

    def filling(*args: Any) -> dict[str, object]:
        calls.append(args[1])
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args)

    monkeypatch.setattr(backup_service, "_part_add", filling)
    folder = tmp_path / "full"
    with pytest.raises(
        CommandError, match=f"cannot write the backup into {folder}: the disk is full"
    ):
        call_command("backup", str(folder))
    assert calls[0] == "wirecat.db" and calls[1].startswith("blobs/")
    assert sorted(p.name for p in folder.iterdir()) == [], "a failed backup left a file"
    assert BackupRun.objects.filter(ok=False).count() == 2
