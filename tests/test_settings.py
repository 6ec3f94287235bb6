"""Settings come from the environment with safe defaults (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = (
    "import json, django; from django.conf import settings; django.setup(); "
    "print(json.dumps({'db': settings.DATABASES['default']['NAME'], "
    "'secure': [settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE], "
    "'proxy': list(getattr(settings, 'SECURE_PROXY_SSL_HEADER', None) or []), "
    "'hosts': settings.ALLOWED_HOSTS, 'origins': settings.CSRF_TRUSTED_ORIGINS, "
    "'debug': settings.DEBUG, 'broker': settings.CELERY_BROKER_URL}))"
)


def probe(tmp_path: Path, **env: str) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("WIRECAT_", "CELERY_"))}
    clean.update({"DJANGO_SETTINGS_MODULE": "wirecat.settings", "HOME": str(tmp_path), **env})
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=clean,
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_safe_defaults(tmp_path: Path) -> None:
    got = probe(tmp_path, XDG_DATA_HOME=str(tmp_path / "xdg"))
    assert got["db"] == str(tmp_path / "xdg" / "WireCat" / "wirecat.db")
    assert got["debug"] is False
    assert got["secure"] == [False, False]
    assert got["hosts"] == ["127.0.0.1", "localhost", "[::1]"]
    assert got["broker"] == f"sqla+sqlite:///{tmp_path / 'xdg' / 'WireCat' / 'broker.db'}"
    key = tmp_path / "xdg" / "WireCat" / "secret_key"
    assert key.stat().st_mode & 0o777 == 0o600


def test_state_dir_and_db_name(tmp_path: Path) -> None:
    got = probe(tmp_path, WIRECAT_STATE_DIR=str(tmp_path / "state"), WIRECAT_DB="other.db")
    assert got["db"] == str(tmp_path / "state" / "other.db")


def test_behind_an_https_tunnel(tmp_path: Path) -> None:
    got = probe(
        tmp_path,
        WIRECAT_STATE_DIR=str(tmp_path / "s"),
        WIRECAT_ALLOWED_HOSTS="cat.example.ts.net",
        WIRECAT_CSRF_TRUSTED_ORIGINS="https://cat.example.ts.net",
        WIRECAT_PROXY_SSL_HEADER="X-Forwarded-Proto",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/0",
    )
    assert got["secure"] == [True, True]
    assert got["proxy"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert got["hosts"] == ["cat.example.ts.net"]
    assert got["origins"] == ["https://cat.example.ts.net"]
    assert got["broker"] == "redis://127.0.0.1:6379/0"


def test_system_checks_report_nothing() -> None:
    """`wirecat start` and every command print the system checks: no warning may appear."""
    from django.core.management import call_command

    call_command("check", fail_level="WARNING")
