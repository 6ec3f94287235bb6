"""A real Celery worker (a separate process, not eager mode) runs a job that writes to the
store: on the embedded SQLite broker, and on a real redis-server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from django.conf import settings as django_settings
from django.db import connection

from archive.owner.models import WorkerHeartbeat
from archive.store.models import Message
from archive.sync.models import SyncRun
from archive.sync.services.accounts import sync_connect
from tests.archive.test_db_backend import assert_store_settings
from tests.providers.bot_api import ALICE, GROUP, TOKEN, BotApi

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def celery_worker(
    broker_url: str, state_dir: Path, queues: str | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        "WIRECAT_STATE_DIR": str(state_dir),
        "WIRECAT_DB": connection.settings_dict["NAME"],  # the test database file
        "CELERY_BROKER_URL": broker_url,
    }
    log = (state_dir / "worker.log").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "wirecat",
            "worker",
            "--pool=solo",
            "-Q",
            queues or django_settings.WORKER_QUEUES,
            "--loglevel=INFO",
            f"--hostname=test-{os.getpid()}@%h",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def wait_for_heartbeat(
    pid: int, state_dir: Path, after: datetime | None = None, timeout: float = 60
) -> WorkerHeartbeat:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        beat = WorkerHeartbeat.objects.filter(pid=pid).first()
        if beat is not None and (after is None or beat.seen_at > after):
            return beat
        time.sleep(0.2)
    log = (state_dir / "worker.log").read_text(errors="replace")
    raise AssertionError(
        f"no heartbeat from worker {pid} within {timeout}s; its log:\n{log[-4000:]}"
    )


def run_heartbeat_through(broker_url: str, state_dir: Path) -> WorkerHeartbeat:
    sender = Celery("test-sender", broker=broker_url)
    with celery_worker(broker_url, state_dir) as proc:
        # A worker announces itself when ready (a job it queues for itself)…
        ready = wait_for_heartbeat(proc.pid, state_dir)
        # …and runs a job sent from another process.
        sender.send_task("archive.jobs.heartbeat")
        beat = wait_for_heartbeat(proc.pid, state_dir, after=ready.seen_at)
    assert proc.returncode is not None
    return beat


def test_worker_on_embedded_sqlite_broker(tmp_path: Path) -> None:
    broker = f"sqla+sqlite:///{tmp_path / 'broker.db'}"
    beat = run_heartbeat_through(broker, tmp_path)
    # The worker's own connection runs with the store's settings.
    assert_store_settings(beat.store)
    assert beat.store["driver"] == "sqlean.dbapi2"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install redis-server (Debian package redis-server)")
        pytest.skip("redis-server is not installed here; CI installs it and runs this test")
    port = free_port()
    proc = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_worker_on_redis_broker(redis_url: str, tmp_path: Path) -> None:
    beat = run_heartbeat_through(redis_url, tmp_path)
    assert_store_settings(beat.store)


def test_a_live_sync_runs_through_a_worker_on_redis_taking_only_the_sync_queue(
    redis_url: str, settings: Any
) -> None:
    """Scale-out: the same job, unchanged, through Redis to a worker that takes `sync` only."""
    api = BotApi()
    try:
        for n in range(1, 151):
            api.post(GROUP, ALICE, f"over redis {n}")
        sync = sync_connect(
            kind="telegram_bot", credentials={"token": TOKEN}, settings={"api_url": api.url}
        )
        sender = Celery("test-sender", broker=redis_url)
        sender.conf.task_routes = settings.CELERY_TASK_ROUTES
        state = Path(settings.STATE_DIR)  # the worker opens the credentials with its key
        with celery_worker(redis_url, state, queues="sync"):
            sender.send_task("archive.jobs.account_sync", args=[sync.pk, True])
            deadline = time.monotonic() + 60
            while Message.objects.count() < 150 and time.monotonic() < deadline:
                time.sleep(0.2)
        log = (state / "worker.log").read_text(errors="replace")
        assert Message.objects.count() == 150, log[-3000:]
        assert "archive.jobs.account_sync" in log and "[queues]" in log and ".> sync" in log
        run = SyncRun.objects.get()
        assert (run.outcome, run.added) == ("done", 150)
    finally:
        api.close()
