"""Issue 15's security cases: sign-in guessing, the state folder's modes, cookies and
headers, thumbnails decoded in the worker, server-path imports under their roots, one-time
login codes, and the dependency floors and lock."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from django.contrib.auth.hashers import MD5PasswordHasher
from django.contrib.auth.models import User
from django.test import Client
from PIL import Image, ImageFile

from archive.owner.models import LoginCode
from archive.owner.services import login_code_issue, owner_set_password
from archive.store.blobs import blob_put
from archive.store.domain import AttachmentRecord
from archive.store.jobs import thumbnail_make
from archive.store.models import Attachment
from archive.store.sink import batch_record
from tests.conftest import OWNER_PASSWORD
from tests.factories import batch, message

ROOT = Path(__file__).resolve().parent.parent
WRONG = "not the password 123"


class CountingHasher(MD5PasswordHasher):
    """A real hasher (fast, for tests) that counts how often a password is hashed."""

    algorithm = "counting_md5"
    calls: ClassVar[int] = 0

    def encode(self, password: str, salt: str) -> str:
        CountingHasher.calls += 1
        return super().encode(password, salt)

    def verify(self, password: str, encoded: str) -> bool:
        CountingHasher.calls += 1
        return super().verify(password, encoded)


@pytest.fixture
def counted_owner(db: None, settings: Any) -> User:
    settings.PASSWORD_HASHERS = ["tests.test_security.CountingHasher"]
    settings.LOGIN_ATTEMPTS = 5
    settings.LOGIN_WINDOW_SECONDS = 900
    owner = owner_set_password(code=login_code_issue().code, password=OWNER_PASSWORD)
    assert owner.password.startswith("counting_md5$")
    CountingHasher.calls = 0
    return owner


def sign_in(client: Client, password: str, user: str = "owner", path: str = "/login/") -> Any:
    return client.post(path, {"username": user, "password": password})


# --- 1. sign-in guessing -------------------------------------------------------------------


def test_the_attempt_after_the_limit_is_429_before_any_hashing(counted_owner: User) -> None:
    client = Client()
    for attempt in range(5):
        response = sign_in(client, WRONG)
        assert response.status_code == 200 and b"not right" in response.content, attempt
    hashed = CountingHasher.calls
    assert hashed >= 5  # each wrong attempt was checked
    locked = sign_in(client, WRONG)
    assert locked.status_code == 429
    assert 0 < int(locked["Retry-After"]) <= 900
    assert b"Too many attempts" in locked.content
    assert CountingHasher.calls == hashed  # no hash for the refused attempt
    right = sign_in(client, OWNER_PASSWORD)
    assert right.status_code == 429 and CountingHasher.calls == hashed
    assert client.get("/").status_code == 302  # not signed in


def test_a_right_password_waits_until_the_window_has_passed(
    counted_owner: User, settings: Any
) -> None:
    settings.LOGIN_ATTEMPTS = 2
    settings.LOGIN_WINDOW_SECONDS = 2
    client = Client()
    started = time.monotonic()
    assert sign_in(client, WRONG).status_code == 200
    assert sign_in(client, WRONG).status_code == 200
    assert sign_in(client, OWNER_PASSWORD).status_code == 429
    time.sleep(max(0.0, 2.2 - (time.monotonic() - started)))
    assert sign_in(client, OWNER_PASSWORD).status_code == 302
    assert client.get("/").status_code == 200


def test_a_lock_holds_its_user_name_or_address_only(counted_owner: User) -> None:
    # Five user names guessed from one address: that address is locked, for any name…
    for n in range(5):
        assert sign_in(Client(REMOTE_ADDR="198.51.100.1"), WRONG, user=f"u{n}").status_code == 200
    assert sign_in(Client(REMOTE_ADDR="198.51.100.1"), WRONG, user="other").status_code == 429
    # …and not another address, nor the owner's user name elsewhere.
    owner_elsewhere = sign_in(Client(REMOTE_ADDR="198.51.100.2"), OWNER_PASSWORD)
    assert owner_elsewhere.status_code == 302
    # The owner's name guessed from five addresses: that name is locked, from anywhere…
    for n in range(5):
        assert sign_in(Client(REMOTE_ADDR=f"203.0.113.{n}"), WRONG).status_code == 200
    assert sign_in(Client(REMOTE_ADDR="203.0.113.99"), OWNER_PASSWORD).status_code == 429
    # …and other names from a fresh address still try.
    assert sign_in(Client(REMOTE_ADDR="203.0.113.99"), WRONG, user="x").status_code == 200


def test_the_tunnel_header_counts_only_when_configured(counted_owner: User, settings: Any) -> None:
    settings.LOGIN_ATTEMPTS = 2

    def attempt(forwarded: str) -> int:
        client = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=forwarded)
        return int(sign_in(client, WRONG, user=f"user-{forwarded}").status_code)

    # Not configured: the header is ignored, every attempt is the connection's address.
    assert [attempt("192.0.2.1"), attempt("192.0.2.2"), attempt("192.0.2.3")] == [200, 200, 429]
    settings.CLIENT_IP_HEADER = "HTTP_X_FORWARDED_FOR"
    # Configured: the entry the tunnel added (the last) is the client.
    assert [attempt("10.9.9.9, 192.0.2.7"), attempt("10.9.9.8, 192.0.2.7")] == [200, 200]
    assert attempt("10.9.9.7, 192.0.2.7") == 429  # a made-up first entry does not help
    assert attempt("192.0.2.8") == 200


def test_admin_login_and_the_code_page_are_throttled(counted_owner: User, settings: Any) -> None:
    settings.LOGIN_ATTEMPTS = 3
    admin = Client(REMOTE_ADDR="198.51.100.10")
    for _ in range(3):
        assert sign_in(admin, WRONG, path="/admin/login/").status_code == 200
    hashed = CountingHasher.calls
    assert sign_in(admin, OWNER_PASSWORD, path="/admin/login/").status_code == 429
    assert CountingHasher.calls == hashed

    issued = login_code_issue()
    guesser = Client(REMOTE_ADDR="198.51.100.11")
    for n in range(3):
        assert guesser.post("/login/code/", {"code": f"guess-{n}"}).status_code == 404
    refused = guesser.post("/login/code/", {"code": issued.code})
    assert refused.status_code == 429 and refused["Retry-After"]
    # The real link still works from another address.
    owner = Client(REMOTE_ADDR="198.51.100.12")
    assert owner.post("/login/code/", {"code": issued.code}).status_code == 200


def test_failures_and_locks_are_logged_without_the_password(
    counted_owner: User, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings.LOGIN_ATTEMPTS = 1
    secret_guess = "hunter2-guess-xyzzy"
    with caplog.at_level(logging.WARNING, logger="wirecat.security"):
        sign_in(Client(REMOTE_ADDR="192.0.2.44"), secret_guess)
        sign_in(Client(REMOTE_ADDR="192.0.2.44"), OWNER_PASSWORD)
    lines = [r.getMessage() for r in caplog.records if r.name == "wirecat.security"]
    assert any(
        "sign-in failed at /login/" in line and "'owner'" in line and "192.0.2.44" in line
        for line in lines
    ), lines
    assert any("sign-in refused (429" in line for line in lines), lines
    assert secret_guess not in caplog.text and OWNER_PASSWORD not in caplog.text


# --- 2. the state folder -------------------------------------------------------------------


def run_settings(state: Path, home: Path, code: str = "") -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WIRECAT_", "CELERY_"))}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "wirecat.settings",
            "HOME": str(home),
            "WIRECAT_STATE_DIR": str(state),
        }
    )
    # As every process starts: the `wirecat` command (`wirecat start` runs the others).
    out = subprocess.run(
        [sys.executable, "-m", "wirecat", "shell", "--no-imports", "-c", code or "pass"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout


MAKE_LATER = """
import os
from django.conf import settings
file, folder = settings.STATE_DIR / "made-later", settings.STATE_DIR / "folder-later"
file.write_text("x")
folder.mkdir()
print(oct(os.stat(file).st_mode & 0o777), oct(os.stat(folder).st_mode & 0o777))
"""


def mode(path: Path) -> int:
    return path.lstat().st_mode & 0o777


def test_a_loose_state_folder_is_made_private_at_start(tmp_path: Path) -> None:
    state = tmp_path / "state"
    blob_dir = state / "blobs" / "ab" / "cd"
    blob_dir.mkdir(parents=True)
    files = [
        state / "wirecat.db",
        state / "wirecat.db-wal",
        state / "wirecat.db-shm",
        state / "credentials.key",
        state / "broker.db",
        blob_dir / ("abcd" + "0" * 60),
        state / "thumbs" / "ab" / "x-320.png",
    ]
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
        path.chmod(0o644)
    for folder in (state, state / "blobs", state / "blobs" / "ab", blob_dir, state / "thumbs"):
        folder.chmod(0o755)
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("not ours")
    outside.chmod(0o644)
    (state / "link").symlink_to(outside)

    # What the process makes after its start is private too (its umask).
    made = run_settings(state, tmp_path, MAKE_LATER)
    assert made.split() == ["0o600", "0o700"]
    assert mode(state) == 0o700
    for folder in (state / "blobs", state / "blobs" / "ab", blob_dir, state / "thumbs"):
        assert mode(folder) == 0o700, folder
    for path in files:
        assert mode(path) == 0o600, path
    assert mode(state / "secret_key") == 0o600
    assert mode(outside) == 0o644  # a link is not followed out of the folder


def test_a_private_folder_has_its_top_level_checked_at_every_start(tmp_path: Path) -> None:
    state = tmp_path / "state"
    run_settings(state, tmp_path)
    assert mode(state) == 0o700
    (state / "wirecat.db").write_bytes(b"")
    (state / "wirecat.db").chmod(0o644)
    (state / "credentials.key").write_bytes(b"k")
    (state / "credentials.key").chmod(0o640)
    run_settings(state, tmp_path)
    assert mode(state / "wirecat.db") == 0o600
    assert mode(state / "credentials.key") == 0o600


# --- 3. cookies and headers ----------------------------------------------------------------


def settings_in_a_fresh_process(tmp_path: Path, **env: str) -> dict[str, Any]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("WIRECAT_", "CELERY_"))}
    clean.update(
        {
            "DJANGO_SETTINGS_MODULE": "wirecat.settings",
            "HOME": str(tmp_path),
            "WIRECAT_STATE_DIR": str(tmp_path / "state"),
            **env,
        }
    )
    code = (
        "import json, django; from django.conf import settings; django.setup(); "
        "print(json.dumps({'cookies': [settings.SESSION_COOKIE_SECURE, "
        "settings.CSRF_COOKIE_SECURE], 'hsts': settings.SECURE_HSTS_SECONDS, "
        "'roots': [str(p) for p in settings.IMPORT_ROOTS]}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=clean,
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_an_https_base_url_makes_cookies_secure_and_sends_hsts(tmp_path: Path) -> None:
    plain = settings_in_a_fresh_process(tmp_path)
    assert plain["cookies"] == [False, False] and plain["hsts"] == 0
    https = settings_in_a_fresh_process(tmp_path, WIRECAT_BASE_URL="https://cat.example.ts.net")
    assert https["cookies"] == [True, True]
    assert https["hsts"] >= 31_536_000
    forced = settings_in_a_fresh_process(
        tmp_path, WIRECAT_BASE_URL="https://cat.example.ts.net", WIRECAT_SECURE_COOKIES="0"
    )
    assert forced["cookies"] == [False, False]


def test_every_page_has_a_strict_policy_and_hsts_behind_https(
    owner_client: Client, settings: Any
) -> None:
    for path in ("/", "/search/?q=x", "/chats/", "/tasks/", "/agents/", "/admin/"):
        response = owner_client.get(path)
        assert response.status_code == 200, path
        policy = response["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "style-src 'self'" in policy, path
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
        assert "frame-ancestors 'none'" in policy
    assert "Content-Security-Policy" in Client().get("/login/")
    assert "Strict-Transport-Security" not in owner_client.get("/")
    settings.BASE_URL = "https://cat.example.ts.net"
    settings.SECURE_HSTS_SECONDS = 31_536_000
    assert owner_client.get("/")["Strict-Transport-Security"] == "max-age=31536000"


INLINE = [
    (re.compile(r"<[a-zA-Z][^>]*\son[a-z]+\s*=", re.S), "an on…= handler"),
    (re.compile(r"<[a-zA-Z][^>]*\sstyle\s*=", re.S), "a style attribute"),
    (re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", re.S), "inline script"),
    (re.compile(r"<style[\s>]"), "a <style> element"),
    (re.compile(r"hx-on"), "an hx-on handler (eval)"),
    (re.compile(r"javascript:"), "a javascript: URL"),
]


def test_no_template_holds_inline_script_handlers_or_styles() -> None:
    found = []
    for template in sorted((ROOT / "templates").rglob("*.html")):
        text = template.read_text()
        for pattern, what in INLINE:
            if pattern.search(text):
                found.append(f"{template.relative_to(ROOT)}: {what}")
    assert found == []


# --- 4. thumbnails ---------------------------------------------------------------------------


def image_attachment(data: bytes, mime: str = "image/png") -> Attachment:
    blob = blob_put(io.BytesIO(data))
    batch_record(
        batch=batch(
            message(
                "1",
                "a picture",
                attachments=(
                    AttachmentRecord(
                        external_id="a",
                        file_name="picture.png",
                        mime_type=mime,
                        size=blob.size,
                        sha256=blob.sha256,
                        blob_path=blob.path,
                    ),
                ),
            )
        )
    )
    return Attachment.objects.get()


def bomb_png() -> bytes:
    """64 million pixels (over the 40 million limit, under Pillow's own error at twice that) in a
    few kilobytes."""
    out = io.BytesIO()
    Image.new("1", (8000, 8000)).save(out, format="PNG")
    return out.getvalue()


def test_a_decompression_bomb_is_refused_in_the_worker(owner_client: Client, settings: Any) -> None:
    data = bomb_png()
    assert len(data) < 100_000
    attachment = image_attachment(data)
    url = f"/attachments/{attachment.public_id}/thumbnail/"
    assert owner_client.get(url)["Cache-Control"] == "no-store"  # asked for, not decoded
    assert list((Path(settings.STATE_DIR) / "thumbs").rglob("*.png")) == []
    assert thumbnail_make(attachment.public_id).endswith("no image to draw")
    assert list((Path(settings.STATE_DIR) / "thumbs").rglob("*.png")) == []
    assert owner_client.get(url).status_code == 404


class ProbeImage(ImageFile.ImageFile):
    """A format Pillow knows (registered here) that WireCat does not draw."""

    format = "WIRECATPROBE"
    opened: ClassVar[int] = 0

    def _open(self) -> None:
        ProbeImage.opened += 1
        self._size = (10, 10)
        self._mode = "L"
        self.tile = []


@pytest.fixture
def probe_format() -> Iterator[None]:
    Image.register_open(ProbeImage.format, ProbeImage, lambda prefix: prefix[:6] == b"PROBE!")
    ProbeImage.opened = 0
    yield
    Image.OPEN.pop(ProbeImage.format, None)
    if ProbeImage.format in Image.ID:
        Image.ID.remove(ProbeImage.format)


@pytest.mark.usefixtures("probe_format")
def test_only_the_drawn_raster_formats_are_opened(owner_client: Client) -> None:
    Image.open(io.BytesIO(b"PROBE!" + b"\0" * 100)).close()
    assert ProbeImage.opened == 1  # Pillow itself would open it
    attachment = image_attachment(b"PROBE!" + b"\0" * 100)
    assert thumbnail_make(attachment.public_id).endswith("no image to draw")
    assert ProbeImage.opened == 1  # WireCat did not let Pillow try that decoder
    assert owner_client.get(f"/attachments/{attachment.public_id}/thumbnail/").status_code == 404


def tiff() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (40, 40), (1, 2, 3)).save(out, format="TIFF")
    return out.getvalue()


# PostScript, which Pillow recognises (and would hand to Ghostscript to draw).
EPS = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 40 40\n0 0 moveto 40 40 lineto stroke\n"


@pytest.mark.parametrize("data", [EPS, tiff()], ids=["eps", "tiff"])
def test_a_file_of_a_format_not_drawn_gets_no_thumbnail(owner_client: Client, data: bytes) -> None:
    assert Image.open(io.BytesIO(data)).format in {"EPS", "TIFF"}  # Pillow would open it
    attachment = image_attachment(data, mime="image/png")  # a claim, untrusted
    assert thumbnail_make(attachment.public_id).endswith("no image to draw")
    assert owner_client.get(f"/attachments/{attachment.public_id}/thumbnail/").status_code == 404


# --- 5. server-path imports ----------------------------------------------------------------


def post_path(client: Client, path: Path | str) -> Any:
    return client.post("/imports/", {"path": str(path), "format": "", "account": ""})


def test_server_paths_are_read_only_under_the_import_roots(
    owner_client: Client, tmp_path: Path, settings: Any
) -> None:
    allowed = tmp_path / "exports"
    allowed.mkdir()
    settings.IMPORT_ROOTS = [allowed]
    outside = tmp_path / "private" / "result.json"
    outside.parent.mkdir()
    outside.write_text("{}")

    refused = post_path(owner_client, outside)
    assert refused.status_code == 422
    assert "WIRECAT_IMPORT_ROOTS" in refused.content.decode()
    assert "WIRECAT_IMPORT_ROOTS" in post_path(owner_client, "/etc/passwd").content.decode()
    # A link under a root that leads out of it is followed, then refused.
    (allowed / "sneaky.json").symlink_to(outside)
    assert (
        "WIRECAT_IMPORT_ROOTS" in post_path(owner_client, allowed / "sneaky.json").content.decode()
    )
    # So is a folder holding such a link.
    folder = allowed / "export-folder"
    folder.mkdir()
    (folder / "result.json").symlink_to(outside)
    assert "a link out of WIRECAT_IMPORT_ROOTS" in post_path(owner_client, folder).content.decode()
    # Never the state folder, even under a root.
    settings.IMPORT_ROOTS = [tmp_path]
    assert "WIRECAT_IMPORT_ROOTS" in post_path(owner_client, settings.STATE_DIR).content.decode()


def test_the_import_roots_default_to_home(tmp_path: Path) -> None:
    assert settings_in_a_fresh_process(tmp_path)["roots"] == [str(tmp_path)]
    none = settings_in_a_fresh_process(tmp_path, WIRECAT_IMPORT_ROOTS="")
    assert none["roots"] == []
    two = settings_in_a_fresh_process(tmp_path, WIRECAT_IMPORT_ROOTS=f"/srv/a{os.pathsep}~/b")
    assert two["roots"] == ["/srv/a", str(tmp_path / "b")]


# --- 6. one-time login codes ---------------------------------------------------------------


@pytest.mark.django_db
def test_a_new_code_revokes_the_older_ones() -> None:
    first = login_code_issue()
    second = login_code_issue()
    assert Client().post("/login/code/", {"code": first.code}).status_code == 404
    assert Client().post("/login/code/", {"code": second.code}).status_code == 200
    assert LoginCode.objects.count() == 2


@pytest.mark.django_db
def test_the_code_travels_in_the_fragment_and_a_post_body_only() -> None:
    issued = login_code_issue(base_url="https://cat.example.ts.net")
    assert issued.url == f"https://cat.example.ts.net/login/code/#{issued.code}"
    page = Client().get("/login/code/").content.decode()
    assert issued.code not in page and "data-from-fragment" in page
    assert Client().get(f"/login/code/{issued.code}/").status_code == 404  # no such URL


# --- 7. dependencies -------------------------------------------------------------------------


def test_dependency_floors_and_the_hashed_lock() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = {re.split(r"[<>=\[ ]", d, maxsplit=1)[0].lower(): d for d in project["dependencies"]}
    assert ">=23" in deps["gunicorn"]
    assert ">=42.0.4" in deps["cryptography"]
    lock = (ROOT / "requirements.lock").read_text()
    pins = dict(re.findall(r"^([a-z0-9._-]+)==(\S+)", lock, re.MULTILINE))
    for name in deps:
        assert name.replace("_", "-").replace(".", "-") in pins, name
    assert int(pins["gunicorn"].split(".")[0]) >= 23
    major, minor, *rest = (int(part) for part in pins["cryptography"].split(".")[:3])
    assert (major, minor, *rest) >= (42, 0, 4)
    for name, version in pins.items():
        pinned = rf"^{re.escape(name)}=={re.escape(version)} \\\n\s+--hash=sha256:[0-9a-f]{{64}}"
        assert re.search(pinned, lock, re.MULTILINE), name
    makefile = (ROOT / "Makefile").read_text()
    assert "--require-hashes -r requirements.lock" in makefile
