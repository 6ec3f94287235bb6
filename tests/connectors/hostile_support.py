"""Hostile export files, built on the fly (the compressed ones are small), and the real
`wirecat import` run on them in a child process under a memory limit.

A zip bomb is written by hand: one fully flushed deflate block of 1 MiB of the same byte
is self-contained, so repeating it N times (and ending with an empty final block) is a
valid deflate stream of N MiB, made in milliseconds."""

from __future__ import annotations

import base64
import json
import os
import resource
import struct
import subprocess
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

MIB = 1 << 20
ROOT = Path(__file__).resolve().parents[2]

# --- zips ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Member:
    name: str
    data: bytes  # as stored (deflated unless method is 0)
    size: int  # inflated
    crc: int
    method: int = 8


def deflated(name: str, content: bytes) -> Member:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    data = compressor.compress(content) + compressor.flush()
    return Member(name, data, len(content), zlib.crc32(content))


def repeated(name: str, byte: bytes, mib: int, head: bytes = b"", tail: bytes = b"") -> Member:
    """`head`, then `mib` MiB of `byte`, then `tail`, deflated without ever being in memory."""
    unit = byte * MIB
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = compressor.compress(head) + compressor.flush(zlib.Z_FULL_FLUSH) if head else b""
    block = zlib.compressobj(9, zlib.DEFLATED, -15)
    one = block.compress(unit) + block.flush(zlib.Z_FULL_FLUSH)
    ending = zlib.compressobj(9, zlib.DEFLATED, -15)
    last = ending.compress(tail) + ending.flush()
    crc = zlib.crc32(head)
    for _ in range(mib):
        crc = zlib.crc32(unit, crc)
    crc = zlib.crc32(tail, crc)
    data = first + one * mib + last
    return Member(name, data, len(head) + mib * MIB + len(tail), crc)


def write_zip(path: Path, members: list[Member]) -> Path:
    """A plain zip (no zip64: every member under 4 GiB) of `members`."""
    central = b""
    with path.open("wb") as out:
        for member in members:
            offset = out.tell()
            name = member.name.encode()
            fields = (member.method, 0, 0x21, member.crc, len(member.data), member.size)
            out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, *fields, len(name), 0))
            out.write(name)
            out.write(member.data)
            central += struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                20,
                20,
                0,
                *fields,
                len(name),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            central += name
        start = out.tell()
        out.write(central)
        count = len(members)
        out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, len(central), start, 0))
    return path


# --- the files -----------------------------------------------------------------------------

TG_CHAT_HEAD = (
    b'{"name": "Deep", "type": "personal_chat", "id": 42, "messages": [\n'
    b' {"id": 1, "type": "message", "date": "2024-01-02T10:00:00", "date_unixtime": '
    b'"1704189600", "from": "Alice", "from_id": "user1", "text": "hello"},\n'
    b' {"id": 2, "type": "message", "date": "2024-01-02T10:01:00", "date_unixtime": '
    b'"1704189660", "from": "Alice", "from_id": "user1", "text": '
)


def telegram_deep(path: Path, levels: int = 100_000) -> Path:
    """A Telegram chat whose second message's `text` is `levels` nested `[` (200 KB)."""
    path.write_bytes(TG_CHAT_HEAD + b"[" * levels + b"]" * levels + b"}\n]}\n")
    return path


def deep_json(path: Path, levels: int = 100_000, wrapped: bool = True) -> Path:
    """Any JSON, nothing but nesting (in an object, as Telegram's file is, or bare)."""
    nested = b"[" * levels + b"]" * levels
    path.write_bytes(b'{"data": ' + nested + b"}" if wrapped else nested)
    return path


def too_deep_at(data: bytes, limit: int = 64) -> int | None:
    """Where nesting first passes `limit`, walked byte by byte (a reference for the guard)."""
    depth, inside, escaped = 0, False, False
    for offset, byte in enumerate(data):
        if inside:
            if escaped:
                escaped = False
            elif byte == 0x5C:
                escaped = True
            elif byte == 0x22:
                inside = False
        elif byte == 0x22:
            inside = True
        elif byte in b"[{":
            depth += 1
            if depth > limit:
                return offset
        elif byte in b"]}":
            depth -= 1
    return None


def discord_deep(path: Path, levels: int = 100_000) -> Path:
    """A DiscordChatExporter file whose first message's `embeds` nest `levels` deep."""
    head = (
        b'{"guild": {"id": "1", "name": "Guild"}, "channel": {"id": "2", "type": '
        b'"GuildTextChat", "name": "general"}, "dateRange": {"after": null, "before": null},'
        b' "messages": [{"id": "3", "type": "Default", "timestamp": '
        b'"2024-01-02T10:00:00+00:00", "content": "hi", "author": {"id": "4", "name": "a"},'
        b' "embeds": '
    )
    path.write_bytes(head + b"[" * levels + b"]" * levels + b'}], "messageCount": 1}')
    return path


WHATSAPP_FIRST = b"[02/01/2024, 10:00:00] Alice: hello\n[02/01/2024, 10:01:00] Bob: "


def whatsapp_nul_zip(path: Path, mib: int = 2048) -> Path:
    """A WhatsApp zip (2 MB) whose `_chat.txt` inflates to `mib` MiB of NUL."""
    return write_zip(path, [repeated("_chat.txt", b"\x00", mib, head=WHATSAPP_FIRST)])


def whatsapp_long_line(path: Path, mib: int = 100) -> Path:
    """A WhatsApp chat text with one line of `mib` MiB."""
    with path.open("wb") as out:
        out.write(WHATSAPP_FIRST)
        chunk = b"abcdefghij" * (MIB // 10) + b"abcdef"
        for _ in range(mib):
            out.write(chunk)
        out.write(b"\n[02/01/2024, 10:02:00] Alice: bye\n")
    return path


def slack_zip(path: Path, day: Member) -> Path:
    users = [{"id": "U1", "name": "alice", "real_name": "Alice"}]
    channels = [{"id": "C1", "name": "general", "created": 1704189600, "members": ["U1"]}]
    return write_zip(
        path,
        [
            deflated("users.json", json.dumps(users).encode()),
            deflated("channels.json", json.dumps(channels).encode()),
            day,
        ],
    )


def slack_spaces_zip(path: Path, mib: int = 2048) -> Path:
    """A Slack zip whose one day file is `mib` MiB of spaces (inside `[` `]`)."""
    return slack_zip(path, repeated("general/2024-01-02.json", b" ", mib, head=b"[", tail=b"]"))


def telegram_big_message(path: Path, mib: int = 50) -> tuple[Path, str]:
    """A Telegram chat with one message of `mib` MiB of text (as real exports write it: in
    `text` and again in `text_entities`); returns the path and the text."""
    words = "Lorem ipsum dolor sit amet, приветствую вас, consectetur adipiscing elit. "
    text = (words * (mib * MIB // len(words.encode()) + 1))[: mib * MIB // 1]
    body = json.dumps(text, ensure_ascii=False).encode()
    with path.open("wb") as out:
        out.write(TG_CHAT_HEAD)
        out.write(body)
        out.write(b', "text_entities": [{"type": "plain", "text": ')
        out.write(body)
        out.write(b"}]},\n")
        out.write(
            b' {"id": 3, "type": "message", "date": "2024-01-02T10:02:00", "date_unixtime": '
            b'"1704189720", "from": "Alice", "from_id": "user1", "text": "bye"}\n]}\n'
        )
    return path, text


def mbox_with_attachment(path: Path, mib: int = 30) -> tuple[Path, bytes]:
    """An mbox of two messages, the first carrying a `mib` MiB attachment (base64, 76-char
    lines); returns the path and the attachment's bytes."""
    payload = os.urandom(mib * MIB)
    encoded = base64.encodebytes(payload)
    with path.open("wb") as out:
        out.write(
            b"From alice@example.com Tue Jan  2 10:00:00 2024\n"
            b"From: Alice <alice@example.com>\nTo: Bob <bob@example.com>\n"
            b"Subject: the big file\nDate: Tue, 02 Jan 2024 10:00:00 +0000\n"
            b"Message-ID: <big@example.com>\nMIME-Version: 1.0\n"
            b'Content-Type: multipart/mixed; boundary="BOUNDARY"\n\n'
            b"--BOUNDARY\nContent-Type: text/plain; charset=utf-8\n\nHere it is.\n"
            b"--BOUNDARY\nContent-Type: application/octet-stream\n"
            b'Content-Disposition: attachment; filename="big.bin"\n'
            b"Content-Transfer-Encoding: base64\n\n"
        )
        out.write(encoded)
        out.write(
            b"--BOUNDARY--\n\n"
            b"From bob@example.com Tue Jan  2 11:00:00 2024\n"
            b"From: Bob <bob@example.com>\nTo: Alice <alice@example.com>\n"
            b"Subject: Re: the big file\nDate: Tue, 02 Jan 2024 11:00:00 +0000\n"
            b"Message-ID: <reply@example.com>\nIn-Reply-To: <big@example.com>\n\nThanks!\n"
        )
    return path, payload


# --- running the import --------------------------------------------------------------------

# The import service, as `wirecat import` runs it (job, reader in a forked child, batches,
# staging, sink), without the command's system checks; it prints what became of the job, its
# VmPeak (address space) and the most resident memory of it (VmHWM) and of its reader (the
# children's ru_maxrss; the test runner's own is not counted, as it would be in the maximum
# resident set the runner gets for the child it forked: that survives exec).
DRIVER = """
import json, os, resource, sys
from pathlib import Path
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "wirecat.settings")
import django
django.setup()
from archive.imports.services import import_job_create, import_run
from wirecat.errors import WireCatError
path, format_name = Path(sys.argv[1]), sys.argv[2] or None
try:
    job = import_run(job_id=import_job_create(source=path, format_name=format_name).pk)
    found = {"status": str(job.status), "errors": job.errors, "added": job.added}
except WireCatError as exc:
    found = {"status": "refused", "errors": [str(exc)], "added": 0}
for line in open("/proc/self/status"):
    if line.startswith(("VmPeak:", "VmHWM:")):
        found[line.split(":")[0]] = int(line.split()[1]) * 1024
found["reader"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps(found))
sys.exit(0 if found["status"] == "done" else 1)
"""


@dataclass(frozen=True)
class Run:
    returncode: int
    status: str
    errors: list[str]
    added: int
    vm_peak: int  # bytes of address space the importing process reached
    peak_rss: int  # bytes: the most resident memory of the import or its reader process
    output: str

    @property
    def error(self) -> str:
        return self.errors[-1] if self.errors else ""


def environment(state: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    found = {**os.environ, "WIRECAT_STATE_DIR": str(state), **(env or {})}
    found.pop("DJANGO_SETTINGS_MODULE", None)
    return found


def migrated(state: Path) -> Path:
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--skip-checks", "-v0"],
        cwd=ROOT,
        env=environment(state),
        check=True,
    )
    return state


def import_in_child(
    state: Path,
    export: Path,
    *,
    format_name: str = "",
    limit: int | None = None,
    env: dict[str, str] | None = None,
) -> Run:
    """Import `export` in a child process with WIRECAT_STATE_DIR=`state`, its address space
    capped at `limit` bytes (RLIMIT_AS, which the reader it forks inherits)."""

    def cap() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    log = state / "import.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-c", DRIVER, str(export), format_name],
            cwd=ROOT,
            env=environment(state, env),
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=cap,
        )
        process.wait()
    output = log.read_text(errors="replace")
    lines = [line for line in output.splitlines() if line.startswith("{")]
    found = json.loads(lines[-1]) if lines else {}
    return Run(
        returncode=process.returncode,
        status=found.get("status", "crashed"),
        errors=found.get("errors", []),
        added=found.get("added", 0),
        vm_peak=found.get("VmPeak", 0),
        peak_rss=max(found.get("VmHWM", 0), found.get("reader", 0)),
        output=output,
    )
