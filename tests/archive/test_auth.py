"""Nothing readable anonymously; the one-time login link; the owner's password."""

from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RegexPattern, RoutePattern
from django.utils import timezone

from archive.owner.models import LoginCode
from archive.owner.services import login_code_issue
from tests.conftest import OWNER_PASSWORD

pytestmark = pytest.mark.django_db

# Pages that must answer strangers: signing in, and the site's icon (it holds no data).
PUBLIC = {"login", "login_code", "admin:login", "logout", "favicon"}


def sample_path(pattern: Any) -> str:
    if isinstance(pattern, RoutePattern):
        route = str(pattern)
        route = re.sub(r"<int:\w+>", "1", route)
        return re.sub(r"<(?:\w+:)?\w+>", "x1", route)
    assert isinstance(pattern, RegexPattern)
    regex = pattern.regex.pattern.lstrip("^").rstrip("$").replace("\\Z", "")

    def group(match: re.Match[str]) -> str:
        body = match.group(1)
        first = body.split("|")[0]
        return first if re.fullmatch(r"[\w-]+", first) else "1"

    return re.sub(r"\(\?P<\w+>([^()]*(?:\([^()]*\))?[^()]*)\)", group, regex).replace("\\", "")


def all_urls() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []

    def walk(patterns: list[Any], prefix: str, namespace: str) -> None:
        for entry in patterns:
            if isinstance(entry, URLResolver):
                ns = entry.namespace or ""
                full_ns = f"{namespace}:{ns}".strip(":") if ns else namespace
                walk(entry.url_patterns, prefix + sample_path(entry.pattern), full_ns)
            elif isinstance(entry, URLPattern):
                name = f"{namespace}:{entry.name}".strip(":") if entry.name else ""
                found.append((name, "/" + prefix + sample_path(entry.pattern)))

    walk(get_resolver().url_patterns, "", "")
    return found


def test_the_walk_sees_every_area() -> None:
    paths = [path for _, path in all_urls()]
    assert any(p.startswith("/api/") for p in paths)
    assert any(p.startswith("/admin/archive/message/") for p in paths)
    assert "/chats/1/" in paths
    assert len(paths) > 60


@pytest.mark.parametrize(("name", "path"), all_urls(), ids=lambda v: str(v))
def test_every_url_refuses_anonymous_access(name: str, path: str) -> None:
    if name in PUBLIC:
        return
    client = Client()
    for method in ("get", "post"):
        response = getattr(client, method)(path)
        if path.startswith(("/api/", "/mcp")) and "docs" not in path and "openapi" not in path:
            assert response.status_code in (401, 404, 405), (method, path, response.status_code)
            continue
        assert response.status_code in (302, 403, 405), (method, path, response.status_code)
        if response.status_code == 302:
            assert "/login/" in response["Location"], (method, path, response["Location"])


def test_public_pages_hold_no_data(owner: User) -> None:
    client = Client()
    assert client.get("/login/").status_code == 200
    assert client.get("/login/code/").status_code == 200  # asks for the code, shows nothing
    assert client.post("/login/code/", {"code": "not-a-code"}).status_code == 404


def test_one_time_code_sets_password_once() -> None:
    issued = login_code_issue()
    assert issued.code not in str(list(LoginCode.objects.values()))  # only its hash is kept
    # The link holds the code in its fragment, which no browser sends; the page posts it.
    assert issued.url.endswith(f"/login/code/#{issued.code}")
    client = Client()
    page = client.post("/login/code/", {"code": issued.code})
    assert page.status_code == 200 and b"Set the owner" in page.content
    response = client.post(
        "/login/code/",
        {"code": issued.code, "password1": OWNER_PASSWORD, "password2": OWNER_PASSWORD},
    )
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200  # signed in
    owner = User.objects.get()
    assert owner.is_superuser and owner.password.startswith("argon2")
    again = Client().post(
        "/login/code/",
        {"code": issued.code, "password1": "another pass 123", "password2": "another pass 123"},
    )
    assert again.status_code == 404
    assert b"not valid" in again.content
    assert Client().login(username="owner", password=OWNER_PASSWORD)


def test_expired_code_is_refused() -> None:
    issued = login_code_issue()
    LoginCode.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    response = Client().post("/login/code/", {"code": issued.code})
    assert response.status_code == 404
    assert not User.objects.exists()


def test_weak_password_is_explained_and_code_kept() -> None:
    issued = login_code_issue()
    response = Client().post(
        "/login/code/", {"code": issued.code, "password1": "short", "password2": "short"}
    )
    assert response.status_code == 200
    assert b"too short" in response.content
    assert not User.objects.exists()
    assert LoginCode.objects.get().used_at is None


def test_mismatched_passwords_are_explained() -> None:
    issued = login_code_issue()
    response = Client().post(
        "/login/code/",
        {"code": issued.code, "password1": OWNER_PASSWORD, "password2": "something else"},
    )
    assert b"The two passwords differ" in response.content


def test_createowner_prints_a_working_link() -> None:
    out = StringIO()
    call_command("createowner", stdout=out)
    url = re.search(r"http://\S+/login/code/#(\S+)", out.getvalue())
    assert url is not None
    assert Client().post("/login/code/", {"code": url.group(1)}).status_code == 200


def test_first_start_prints_the_link_only_without_owner() -> None:
    out = StringIO()
    call_command("start", "--prepare-only", stdout=out)
    assert "/login/code/" in out.getvalue()
    issued = login_code_issue()
    Client().post(
        "/login/code/",
        {"code": issued.code, "password1": OWNER_PASSWORD, "password2": OWNER_PASSWORD},
    )
    out = StringIO()
    call_command("start", "--prepare-only", stdout=out)
    assert "/login/code/" not in out.getvalue()


def test_password_sign_in(owner: User) -> None:
    client = Client()
    bad = client.post("/login/", {"username": "owner", "password": "wrong"})
    assert bad.status_code == 200 and b"not right" in bad.content
    good = client.post("/login/", {"username": "owner", "password": OWNER_PASSWORD})
    assert good.status_code == 302
    assert client.get("/").status_code == 200


def test_api_accepts_the_owner_session(owner_client: Client) -> None:
    response = owner_client.get("/api/stats")
    assert response.status_code == 200
    assert response.json()["messages"] == 0
    assert owner_client.get("/api/docs").status_code == 200
