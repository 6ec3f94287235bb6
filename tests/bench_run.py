"""Running a benchmark script the way a person would, for the tests that hold each one
runs end to end at a tiny size and prints every figure it reports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def bench_run(script: str, *args: str, tmp_path: Path, timeout: float) -> str:
    """`python bench/<script> <args>` from the repository, with a state folder of its own
    (the benchmark makes its stores where `args` say); its output, once it succeeded."""
    env = {**os.environ, "WIRECAT_STATE_DIR": str(tmp_path / "unused-state")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout
