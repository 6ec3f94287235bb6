"""The real HTTP stack for the benchmarks: gunicorn serving a state folder on loopback,
and the percentiles they print. Shared by `gateway_bench.py` and `search_under_load.py`."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pct(samples: list[float], share: float) -> float:
    """The `share` percentile of `samples` (seconds), in milliseconds."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))] * 1000


def serve(state: Path, port: int, workers: int) -> subprocess.Popen[bytes]:
    """gunicorn on 127.0.0.1:`port` serving `state`, once it answers (at normal priority,
    as `wirecat start` runs it)."""
    env = {
        **os.environ,
        "WIRECAT_STATE_DIR": str(state),
        "WIRECAT_ALLOWED_HOSTS": "127.0.0.1",
        "WIRECAT_LOG_LEVEL": "WARNING",
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "wirecat.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/api/stats", timeout=2)  # 401: it answers
            return proc
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("gunicorn did not start")
