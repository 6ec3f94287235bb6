"""A full disk, a read-only state folder, a store never migrated: one sentence saying what,
where and what to do, on the command line, the page and the API; a failed import is
marked failed with its reason. (issue 15, "Faults and bad input")

The full store is SQLite's own: `PRAGMA max_page_count` caps the test store's file, so a
write past it raises the real SQLITE_FULL. A full disk for blobs and uploads is a 1 MB
tmpfs (mounting needs root or a user namespace: skipped without, never under CI=true).
A read-only state folder is a read-only bind mount in a mount namespace of the process
under test (`unshare`), so nothing is left mounted behind a test.
"""

from __future__ import annotations

import gc
import io
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client

from archive.imports.models import ImportJob, ImportStatus
from archive.imports.services import import_job_create, import_run

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "telegram"
CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def unavailable(reason: str) -> None:
    """Skip for want of a part of the machine; under CI the part must be there."""
    if CI:
        pytest.fail(f"{reason} (CI=true: this test must run)")
    pytest.skip(reason)


def telegram_export(folder: Path, count: int, text: str = "", files: int = 0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    messages: list[dict[str, Any]] = []
    for i in range(1, count + 1):
        message: dict[str, Any] = {
            "id": i,
            "type": "message",
            "date": "2021-05-01T10:00:00",
            "date_unixtime": str(1_619_863_200 + i),
            "from": "Alice",
            "from_id": "user1",
            "text": f"message {i} {text}",
        }
        if i <= files:
            (folder / f"file_{i}.bin").write_bytes(os.urandom(400_000))
            message.update(file=f"file_{i}.bin", mime_type="application/octet-stream")
        messages.append(message)
    export = folder / "result.json"
    body = {"name": "Family", "type": "private_group", "id": 42, "messages": messages}
    export.write_text(json.dumps(body))
    return export


@pytest.fixture
def store_full() -> Iterator[Any]:
    """`cap(pages)`: the test store may grow by at most `pages` pages. The free pages a
    long test run leaves in the file are taken first (by a scratch table), so "full"
    means the same whatever ran before; the cap and the table go afterwards (the cap
    lives on this connection only)."""

    def cap(pages: int = 0) -> None:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA freelist_count")
            free = cursor.fetchone()[0]
            if free:
                cursor.execute("CREATE TABLE IF NOT EXISTS test_free_pages (filler BLOB)")
                for _ in range(free):  # a page's worth each, until none is free
                    cursor.execute("INSERT INTO test_free_pages VALUES (zeroblob(3000))")
                    cursor.execute("PRAGMA freelist_count")
                    if not cursor.fetchone()[0]:
                        break
            cursor.execute("PRAGMA freelist_count")
            cap.free = cursor.fetchone()[0]  # type: ignore[attr-defined]
            cursor.execute("PRAGMA page_count")
            count = cursor.fetchone()[0]
            cursor.execute(f"PRAGMA max_page_count = {count + pages}")

    yield cap
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA max_page_count = 4294967294")
        cursor.execute("DROP TABLE IF EXISTS test_free_pages")


def big_text(store_full: Any) -> str:
    """More text than the store has room for."""
    return "x" * ((store_full.free + 64) * 4096)


# --- a full store -------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_import_into_a_full_store_is_failed_with_its_reason(
    tmp_path: Path, store_full: Any
) -> None:
    export = telegram_export(tmp_path / "export", 3000, text="words " * 60)
    job = import_job_create(source=export)
    store_full(pages=40)
    job = import_run(job_id=job.pk)
    assert job.status == ImportStatus.FAILED
    reason = job.errors[-1]
    assert reason.startswith("The disk holding ")
    assert "is full (database or disk is full)" in reason and "try again" in reason
    assert ImportJob.objects.get(pk=job.pk).status == ImportStatus.FAILED


@pytest.mark.django_db(transaction=True)
def test_the_import_command_says_the_store_is_full(tmp_path: Path, store_full: Any) -> None:
    export = telegram_export(tmp_path / "export", 3000, text="words " * 60)
    store_full(pages=40)
    out = io.StringIO()
    with pytest.raises(CommandError, match="did not finish"):
        call_command("import", str(export), stdout=out, stderr=out)
    assert "error: The disk holding " in out.getvalue()
    assert "Traceback" not in out.getvalue()
    assert ImportJob.objects.get().status == ImportStatus.FAILED


@pytest.mark.django_db(transaction=True)
def test_a_full_store_is_a_sentence_on_the_page_and_in_the_api(
    owner_client: Client, store_full: Any
) -> None:
    made = owner_client.post(
        "/api/projects", {"key": "HOME", "name": "Home"}, content_type="application/json"
    )
    assert made.status_code == 200, made.content[:300]
    store_full(pages=0)
    text = big_text(store_full)
    api = owner_client.post(
        "/api/projects",
        {"key": "WORK", "name": "Work", "description": text},
        content_type="application/json",
    )
    assert api.status_code == 507, api.content[:300]
    body = api.json()
    assert body["error"] == "StoreFull"
    assert body["detail"].startswith("The disk holding ") and "is full" in body["detail"]

    page = owner_client.post(
        "/tasks/new/", {"project": "HOME", "title": "Call", "description": text}
    )
    assert page.status_code == 507, page.content[:300]
    assert b"The disk holding " in page.content and b"Server Error" not in page.content


@pytest.fixture
def tiny_disk(_state_dir: Path) -> Iterator[Path]:
    """A 1 MB tmpfs as the test's blob folder: a real full disk (ENOSPC)."""
    folder = _state_dir / "blobs"
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        unavailable(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        gc.collect()  # an upload's temporary file left by the failed request: closed here
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.mark.django_db(transaction=True)
def test_blobs_on_a_full_disk_fail_the_import_with_its_reason(
    tmp_path: Path, tiny_disk: Path
) -> None:
    export = telegram_export(tmp_path / "export", 20, files=6)  # 2.4 MB of files
    job = import_run(job_id=import_job_create(source=export).pk)
    assert job.status == ImportStatus.FAILED
    assert job.errors[-1].startswith(f"The disk holding {tiny_disk.parent} is full"), job.errors
    assert "No space left on device" in job.errors[-1]


# Django's multipart parser deletes the half-written temporary file; tempfile's closer
# tries again when it is collected, and says so.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.django_db(transaction=True)
def test_an_upload_to_a_full_disk_is_a_sentence_on_the_page(
    owner_client: Client, tiny_disk: Path, settings: Any
) -> None:
    settings.FILE_UPLOAD_TEMP_DIR = str(tiny_disk)
    upload = SimpleUploadedFile("result.json", b"{" + b" " * 3_000_000 + b"}")
    response = owner_client.post("/imports/", {"file": upload})
    assert response.status_code == 507, response.content[:300]
    assert b"The disk holding " in response.content and b"is full" in response.content
    del response
    gc.collect()  # the parser's temporary file, collected while its warning is ignored


# --- a store never migrated ---------------------------------------------------------------


def wirecat(state: Path, *args: str, namespace: list[str] | None = None) -> Any:
    env = {**os.environ, "WIRECAT_STATE_DIR": str(state)}
    for name in ("WIRECAT_TEST_DB", "WIRECAT_DB", "DJANGO_SETTINGS_MODULE"):
        env.pop(name, None)
    command = [sys.executable, "-m", "wirecat", *args]
    return subprocess.run(
        [*(namespace or []), *command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [
        ("import", str(FIXTURES / "group_2023.json")),
        ("search", "hello"),
        ("sync",),
        ("createowner",),
    ],
)
def test_commands_on_a_store_never_migrated_say_migrate_first(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    state = tmp_path / "never"
    done = wirecat(state, *args)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert (
        f"The store at {state / 'wirecat.db'} has no tables yet: run `wirecat migrate`"
        " (or `make run`) first." in done.stderr
    ), done.stderr[-2000:]


# --- a read-only state folder -------------------------------------------------------------


@pytest.fixture(scope="module")
def ready_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated state folder with a chat, an owner and a signed-in session."""
    state = tmp_path_factory.mktemp("readonly") / "state"
    for args in (("migrate", "-v0"), ("import", str(FIXTURES / "group_2023.json"))):
        done = wirecat(state, *args)
        assert done.returncode == 0, done.stderr[-2000:]
    script = (
        "from django.contrib.auth import get_user_model\n"
        "from django.contrib.sessions.backends.db import SessionStore\n"
        "user = get_user_model().objects.create_superuser('owner', '', 'x' * 12)\n"
        "s = SessionStore()\n"
        "s['_auth_user_id'] = str(user.pk)\n"
        "s['_auth_user_backend'] = 'django.contrib.auth.backends.ModelBackend'\n"
        "s['_auth_user_hash'] = user.get_session_auth_hash()\n"
        "s.create()\n"
        "from tasks.services import project_create\n"
        "project_create(key='HOME', name='Home')\n"
        "from archive.gateway.services.agents import agent_create\n"
        "issued = agent_create(name='reader', scopes=['messages.read'])\n"
        "type(issued.agent).objects.update(rate_per_minute=6)\n"
        "print(issued.token)\n"
        "print(s.session_key)\n"
    )
    done = wirecat(state, "shell", "-c", script)
    assert done.returncode == 0, done.stderr[-2000:]
    *_, token, session = done.stdout.strip().splitlines()
    (state.parent / "session").write_text(session)
    (state.parent / "token").write_text(token)
    return state


def read_only_namespace(folder: Path) -> list[str]:
    """A command prefix running its program with `folder` mounted read-only (only there)."""
    if shutil.which("unshare") is None:
        unavailable("unshare (util-linux) is not installed")
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    prefix = [
        "unshare",
        *user,
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" && exec "$@"',
        str(folder),
    ]
    probe = subprocess.run([*prefix, "touch", str(folder / "probe")], capture_output=True)
    if probe.returncode == 0 or b"Read-only file system" not in probe.stderr:
        unavailable(f"cannot mount read-only: {probe.stderr.decode().strip()}")
    return prefix


def test_commands_on_a_read_only_state_folder(ready_state: Path) -> None:
    ro = read_only_namespace(ready_state)
    found = wirecat(ready_state, "search", "Family OR dinner OR the", namespace=ro)
    assert found.returncode == 0, found.stderr[-2000:]
    sentence = (
        f"The state folder {ready_state} is read-only: WireCat can read the archive but needs"
        " to write its store there to save anything. Make it writable (or set"
        " WIRECAT_STATE_DIR) and try again."
    )
    for args in (
        ("import", str(FIXTURES / "personal_2020")),
        ("createowner",),
        ("start", "--prepare-only"),
    ):
        done = wirecat(ready_state, *args, namespace=ro)
        assert done.returncode == 1, (args, done.stderr[-2000:])
        assert sentence in done.stderr, (args, done.stderr[-2000:])
        assert "Traceback" not in done.stderr


CELERY = {
    "worker": ("worker", "-Q", "celery", "--concurrency=1", "--pool=solo"),
    "beat": (
        "beat",
        "--scheduler",
        "django_celery_beat.schedulers:DatabaseScheduler",
        "--pidfile=",
    ),
}


def celery(state: Path, role: str, namespace: list[str] | None = None) -> Any:
    """`celery -A wirecat <role>` as the Procfile runs it, on `state`; it must stop by
    itself (a worker that started would run until the timeout)."""
    env = {**os.environ, "WIRECAT_STATE_DIR": str(state)}
    for name in ("WIRECAT_TEST_DB", "WIRECAT_DB", "DJANGO_SETTINGS_MODULE"):
        env.pop(name, None)
    program = Path(sys.executable).parent / "celery"
    return subprocess.run(
        [*(namespace or []), str(program), "-A", "wirecat", *CELERY[role]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("role", sorted(CELERY))
def test_the_worker_and_beat_stop_with_the_sentence(
    ready_state: Path, tmp_path: Path, role: str
) -> None:
    ro = read_only_namespace(ready_state)
    done = celery(ready_state, role, namespace=ro)
    assert done.returncode == 1, done.stderr[-2000:]
    assert f"The state folder {ready_state} is read-only" in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr + done.stdout
    never = tmp_path / "never"
    done = celery(never, role)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "has no tables yet: run `wirecat migrate`" in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr + done.stdout


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_web_server_boots_and_reads_from_a_read_only_state_folder(
    ready_state: Path, tmp_path: Path
) -> None:
    ro = read_only_namespace(ready_state)
    port = free_port()
    env = {**os.environ, "WIRECAT_STATE_DIR": str(ready_state), "WIRECAT_PLAIN_STATIC": "1"}
    for name in ("WIRECAT_TEST_DB", "WIRECAT_DB", "DJANGO_SETTINGS_MODULE"):
        env.pop(name, None)
    log = tmp_path / "gunicorn.log"
    gunicorn = Path(sys.executable).parent / "gunicorn"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [*ro, str(gunicorn), "wirecat.wsgi:application", "--bind", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        base = f"http://127.0.0.1:{port}"
        session = (ready_state.parent / "session").read_text()
        with httpx.Client(base_url=base, cookies={"sessionid": session}) as client:
            for _ in range(150):
                try:
                    login = client.get("/login/")
                    break
                except httpx.TransportError:
                    assert server.poll() is None, log.read_text()[-3000:]
                    time.sleep(0.1)
            assert login.status_code in (200, 302), log.read_text()[-3000:]
            # Reading works for the signed-in owner.
            chats = client.get("/api/chats")
            assert chats.status_code == 200, chats.text[:500]
            assert any(c["title"] for c in chats.json()), chats.text[:500]
            page = client.get("/tasks/")
            assert page.status_code == 200, page.text[:500]
            # Writing answers the sentence: 503, JSON in the API, the error page elsewhere.
            token = client.cookies.get("csrftoken") or ""
            headers = {"X-CSRFToken": token, "Referer": base + "/"}
            api = client.post(
                "/api/projects", json={"key": "WORK", "name": "Work"}, headers=headers
            )
            assert api.status_code == 503, api.text[:500]
            assert api.json()["error"] == "StoreReadOnly"
            assert f"The state folder {ready_state} is read-only" in api.json()["detail"]
            form = client.post(
                "/tasks/new/",
                data={"project": "HOME", "title": "Call", "csrfmiddlewaretoken": token},
                headers=headers,
            )
            assert form.status_code == 503, form.text[:500]
            assert f"The state folder {ready_state} is read-only" in form.text
        # An agent reads with its token; its rate limit is counted in memory then.
        token = (ready_state.parent / "token").read_text()
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as agent:
            for path in ("/api/chats", "/api/messages/unread", "/api/changes"):
                read = agent.get(path)
                assert read.status_code == 200, (path, read.text[:500])
            assert agent.get("/api/search/messages?q=morning").json()["hits"], "found nothing"
            # 13 requests span at most two minutes, so one minute holds more than 6.
            answers = [agent.get("/api/chats") for _ in range(9)]
            limited = [a for a in answers if a.status_code == 429]
            assert limited, [a.status_code for a in answers]
            assert limited[0].json()["detail"].startswith("rate limit: 6 requests a minute")
        # Signing in counts the attempt and writes a session: the sentence, not a 500.
        with httpx.Client(base_url=base) as anonymous:
            token = anonymous.get("/login/").cookies.get("csrftoken") or ""
            signin = anonymous.post(
                "/login/",
                data={"username": "owner", "password": "x" * 12, "csrfmiddlewaretoken": token},
                headers={"Referer": base + "/login/"},
            )
            assert signin.status_code == 503, signin.text[:500]
            assert f"The state folder {ready_state} is read-only" in signin.text
    finally:
        server.terminate()
        server.wait(timeout=30)
    text = log.read_text()
    assert "Worker failed to boot" not in text and "Traceback" not in text, text[-3000:]


# --- a SQLite file with iMessage's table names and other columns ----------------------------


@pytest.mark.django_db(transaction=True)
def test_message_table_with_other_columns_is_an_error_naming_file_and_columns(
    tmp_path: Path,
) -> None:
    other = tmp_path / "inventory.db"
    db = sqlite3.connect(other)
    db.executescript(
        "CREATE TABLE message (subject TEXT, body_html TEXT, sent INTEGER);"
        "CREATE TABLE handle (ROWID INTEGER PRIMARY KEY, id TEXT);"
        "CREATE TABLE chat (ROWID INTEGER PRIMARY KEY, guid TEXT);"
        "INSERT INTO message VALUES ('hello', '<p>hi</p>', 1), ('again', '<p>yo</p>', 2);"
    )
    db.commit()
    db.close()
    out = io.StringIO()
    with pytest.raises(CommandError, match="did not finish"):
        call_command("import", str(other), "--format", "imessage", stdout=out, stderr=out)
    job = ImportJob.objects.get()
    assert (job.status, job.added) == (ImportStatus.FAILED, 0)
    assert job.errors == [
        "inventory.db, schema: its message table lacks the columns a message needs"
        " (text or attributedBody; date; handle_id or is_from_me): not an Apple Messages database"
    ]
    assert "error: inventory.db, schema: its message table lacks" in out.getvalue()
