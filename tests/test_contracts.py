"""The import contracts bite: a scratch project with the same contract, one wrong import
at a time, is refused by `lint-imports`; the same project without it passes.

The scratch project mirrors the real layout (a container with capability packages, an
app beside it) so the contract's own code is what is tested, not a copy of its rules.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = Path(sys.executable).parent / "lint-imports"

CONFIG = """
[importlinter]
root_packages =
    scratch
include_external_packages = True
contract_types =
    capabilities: tests.contracts.CapabilityContract

[importlinter:contract:capabilities]
name = Capabilities and their layers
type = capabilities
containers =
    scratch
delivery =
    views
    api
    jobs
    schemas
public =
    models
    services
    selectors
    schemas
foundations =
    scratch.store
delivery_only =
    celery
"""

GOOD = {
    "scratch/store/models.py": "",
    "scratch/store/sink.py": "from scratch.store import models\n",
    "scratch/tags/models.py": "",
    "scratch/tags/services.py": "from scratch.store import sink\nfrom scratch.tags import models\n",
    "scratch/tags/views.py": (
        "from scratch.tags import services\nfrom scratch.people import selectors\n"
    ),
    "scratch/tags/jobs.py": "import celery\nfrom scratch.tags import services\n",
    "scratch/people/selectors.py": "from scratch.store import models\n",
    "scratch/people/matching.py": "",
}


def _project(tmp_path: Path, extra: dict[str, str]) -> Path:
    for name, body in {**GOOD, **extra}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
        for parent in path.relative_to(tmp_path).parents:
            if str(parent) != ".":
                (tmp_path / parent / "__init__.py").touch()
    (tmp_path / ".importlinter").write_text(textwrap.dedent(CONFIG))
    return tmp_path


def _lint(project: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(project), str(ROOT)])}
    return subprocess.run(
        [str(LINT), "--config", str(project / ".importlinter"), "--no-cache"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_scratch_project_passes(tmp_path: Path) -> None:
    result = _lint(_project(tmp_path, {}))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("name", "body", "reason"),
    [
        # a service reaching up into the delivery layer
        ("scratch/tags/services.py", "from scratch.tags import views\n", "logic imports delivery"),
        # a capability reaching inside another instead of its public face
        ("scratch/tags/views.py", "from scratch.people import matching\n", "reaches inside"),
        # a capability importing another's page code
        ("scratch/people/views.py", "from scratch.tags import views\n", "reaches inside"),
        # Celery outside the jobs
        ("scratch/tags/services.py", "import celery\n", "logic knows Celery"),
        # the foundation's delivery is still delivery
        ("scratch/store/api.py", "", None),
    ],
)
def test_a_wrong_import_is_refused(
    tmp_path: Path, name: str, body: str, reason: str | None
) -> None:
    extra = {name: body}
    if reason is None:  # a logic module importing the store's API
        extra["scratch/tags/selectors.py"] = "from scratch.store import api\n"
        reason = "logic imports delivery"
    result = _lint(_project(tmp_path, extra))
    assert result.returncode == 1, result.stdout
    assert reason in " ".join(result.stdout.split())
