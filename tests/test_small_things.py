"""Small things from issue 16: the login link's port follows the bind, the site's icon is
where browsers ask for it, the password rule shows before the first try, the Imports
page says what it does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.contrib.staticfiles import finders
from django.templatetags.static import static
from django.test import Client

from archive.owner.services import login_code_issue, password_rule
from wirecat.settings import default_base_url

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("bind", "url"),
    [
        ("127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("127.0.0.1:9123", "http://127.0.0.1:9123"),
        ("0.0.0.0:8080", "http://127.0.0.1:8080"),
        (":8081", "http://127.0.0.1:8081"),
        ("localhost:5000", "http://localhost:5000"),
        ("192.168.1.20:8000", "http://192.168.1.20:8000"),
        ("[::1]:8001", "http://[::1]:8001"),
        ("[::]:8002", "http://127.0.0.1:8002"),
        ("8003", "http://127.0.0.1:8003"),
        ("0.0.0.0", "http://127.0.0.1:8000"),
        ("unix:/run/wirecat.sock", "http://127.0.0.1:8000"),
        ("", "http://127.0.0.1:8000"),
    ],
)
def test_the_address_without_a_base_url_follows_the_bind(bind: str, url: str) -> None:
    assert default_base_url(bind) == url


def settings_base_url(tmp_path: Path, **env: str) -> str:
    """BASE_URL as a fresh process reads it from its environment."""
    environ = {**os.environ, "WIRECAT_STATE_DIR": str(tmp_path), **env}
    for name in ("WIRECAT_BASE_URL", "WIRECAT_BIND", "DJANGO_SETTINGS_MODULE"):
        if name not in env:
            environ.pop(name, None)
    code = "import wirecat.settings as s; print(s.BASE_URL)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def test_login_links_name_the_port_gunicorn_listens_on(tmp_path: Path) -> None:
    assert settings_base_url(tmp_path, WIRECAT_BIND="0.0.0.0:9123") == "http://127.0.0.1:9123"
    assert settings_base_url(tmp_path) == "http://127.0.0.1:8000"
    chosen = settings_base_url(
        tmp_path, WIRECAT_BIND="127.0.0.1:9123", WIRECAT_BASE_URL="https://cat.example.org/"
    )
    assert chosen == "https://cat.example.org"


@pytest.mark.django_db
def test_favicon_ico_answers_strangers_with_the_icon() -> None:
    response = Client().get("/favicon.ico")
    assert response.status_code == 302
    assert response["Location"] == static("wirecat/favicon.ico")
    found = finders.find("wirecat/favicon.ico")
    assert found is not None
    icon = Path(str(found)).read_bytes()
    assert icon[:4] == b"\x00\x00\x01\x00"  # an ICO file's header
    page = Client().get("/login/")
    assert static("wirecat/favicon.ico").encode() in page.content


def test_the_password_rule_names_what_the_validators_check(settings: Any) -> None:
    assert password_rule() == (
        "At least 10 characters, not like the user name “owner”, not a common password"
        " and not only digits."
    )
    settings.AUTH_PASSWORD_VALIDATORS = [
        {
            "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
            "OPTIONS": {"min_length": 14},
        }
    ]
    assert password_rule() == "At least 14 characters."


@pytest.mark.django_db
def test_the_password_rule_shows_before_the_first_try() -> None:
    issued = login_code_issue()
    page = Client().post("/login/code/", {"code": issued.code})
    html = page.content.decode()
    assert page.status_code == 200 and "Set the owner" in html
    assert 'id="id_password1_helptext">At least 10 characters' in html
    assert 'aria-describedby="id_password1_helptext"' in html
    assert 'role="alert"' not in html  # nothing failed yet


def test_the_imports_page_says_what_an_import_does(owner_client: Client) -> None:
    html = owner_client.get("/imports/").content.decode()
    assert "Pour" not in html
    assert "<h2>Add messages from an export</h2>" in html
    assert "copies its messages and files into the archive" in html
