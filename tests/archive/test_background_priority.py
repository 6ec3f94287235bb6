"""Background work yields to the owner and the agents: an import (the `wirecat import`
process and its reader child) and a Celery worker (and its pool's processes) run at
WIRECAT_BACKGROUND_NICE, read from the real processes; an import keeps its transactions
within WIRECAT_IMPORT_TRANSACTION_MS by writing smaller batches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from archive.imports import running as import_running
from archive.imports.services import IMPORT_MIN_BATCH, import_job_create, import_run
from archive.store.domain import Batch, BatchResult
from archive.store.models import Message

ROOT = Path(__file__).resolve().parents[2]


def telegram_export(path: Path, count: int) -> Path:
    messages = [
        {
            "id": i,
            "type": "message",
            "date": "2021-05-01T10:00:00",
            "date_unixtime": str(1_619_863_200 + i),
            "from": "Alice",
            "from_id": "user1",
            "text": f"message number {i} of the priority test",
        }
        for i in range(1, count + 1)
    ]
    path.write_text(
        json.dumps({"name": "Family", "type": "private_group", "id": 42, "messages": messages})
    )
    return path


def nice_of(pid: int) -> int:
    """The nice value the kernel holds for `pid` (/proc/PID/stat, field 19)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[16])


def children_of(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def wait_for(check: Callable[[], Any], proc: subprocess.Popen[bytes], what: str) -> Any:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            found = check()
        except OSError:  # a process that ended between listing and reading
            found = None
        if found:
            return found
        if proc.poll() is not None:
            raise AssertionError(f"{what}: the process ended first ({proc.returncode})")
        time.sleep(0.005)
    raise AssertionError(f"{what}: not seen within 90 s")


def background_env(state: Path, nice: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("WIRECAT_DB", "CELERY_BROKER_URL")}
    return {**env, "WIRECAT_STATE_DIR": str(state), "WIRECAT_BACKGROUND_NICE": str(nice)}


def target_nice() -> int:
    """A level above this process's own (a process may lower its priority, never raise it
    back), so the one seen in a child can only come from the setting."""
    here = os.getpriority(os.PRIO_PROCESS, 0)
    assert here < 19, "the tests run at the lowest priority already: nothing to observe"
    return min(19, here + 5)


def test_an_import_and_its_reader_child_run_at_the_background_priority(tmp_path: Path) -> None:
    nice = target_nice()
    state = tmp_path / "state"
    env = background_env(state, nice)
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "migrate", "-v0"], cwd=ROOT, env=env, check=True
    )
    export = telegram_export(tmp_path / "result.json", 30_000)
    env |= {"WIRECAT_IMPORT_BATCH": "500", "WIRECAT_IMPORT_TRANSACTION_MS": "0"}
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "import", str(export)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        # The reader is forked once the import runs: both are then at the level.
        reader = wait_for(lambda: children_of(proc.pid), proc, "the reader child")[0]
        assert nice_of(proc.pid) == nice
        assert nice_of(reader) == nice
        output, _ = proc.communicate(timeout=300)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 0, output.decode(errors="replace")[-2000:]


@pytest.mark.slow
def test_a_celery_worker_and_its_pool_run_at_the_background_priority(tmp_path: Path) -> None:
    nice = target_nice()
    state = tmp_path / "state"
    env = background_env(state, nice)
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "migrate", "-v0"], cwd=ROOT, env=env, check=True
    )
    log = (tmp_path / "worker.log").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "wirecat",
            "worker",
            "--pool=prefork",
            "--concurrency=1",
            "-Q",
            "celery,sync,index",
            f"--hostname=nice-{os.getpid()}@%h",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        pool = wait_for(lambda: children_of(proc.pid), proc, "the worker's pool process")[0]
        wait_for(lambda: nice_of(pool) == nice, proc, f"the pool process at nice {nice}")
        assert nice_of(proc.pid) == nice
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def batches_of_import(tmp_path: Path, monkeypatch: Any, count: int) -> list[int]:
    """The number of messages in each transaction an import of `count` messages wrote."""
    sizes: list[int] = []
    real = import_running.batch_record

    def counting(*, batch: Batch, **kwargs: Any) -> BatchResult:
        sizes.append(len(batch.messages))
        return real(batch=batch, **kwargs)

    monkeypatch.setattr(import_running, "batch_record", counting)
    export = telegram_export(tmp_path / f"result-{len(list(tmp_path.iterdir()))}.json", count)
    job = import_run(job_id=import_job_create(source=export, resume=False).pk)
    assert job.status == "done", job.errors
    return sizes


@pytest.mark.django_db
def test_without_a_transaction_budget_batches_are_the_configured_size(
    tmp_path: Path, settings: Any, monkeypatch: Any
) -> None:
    settings.BACKGROUND_NICE = 0
    settings.IMPORT_BATCH_SIZE = 2_000
    settings.IMPORT_TRANSACTION_MS = 0
    assert batches_of_import(tmp_path, monkeypatch, 5_000) == [2_000, 2_000, 1_000]
    assert Message.objects.count() == 5_000


@pytest.mark.django_db
def test_a_transaction_over_budget_makes_the_next_batches_small(
    tmp_path: Path, settings: Any, monkeypatch: Any
) -> None:
    settings.BACKGROUND_NICE = 0
    settings.IMPORT_BATCH_SIZE = 5_000
    settings.IMPORT_TRANSACTION_MS = 1  # no batch fits: each is the smallest there is
    sizes = batches_of_import(tmp_path, monkeypatch, 3 * IMPORT_MIN_BATCH)
    assert sizes == [IMPORT_MIN_BATCH] * 3
    assert Message.objects.count() == 3 * IMPORT_MIN_BATCH


@pytest.mark.django_db
def test_within_the_budget_batches_grow_to_the_configured_size(
    tmp_path: Path, settings: Any, monkeypatch: Any
) -> None:
    settings.BACKGROUND_NICE = 0
    settings.IMPORT_BATCH_SIZE = 2 * IMPORT_MIN_BATCH
    settings.IMPORT_TRANSACTION_MS = 3_600_000  # every batch fits: they double, to the most
    sizes = batches_of_import(tmp_path, monkeypatch, 7 * IMPORT_MIN_BATCH)
    assert sizes == [IMPORT_MIN_BATCH] + [2 * IMPORT_MIN_BATCH] * 3
