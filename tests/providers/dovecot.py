"""A real IMAP server for the tests: Debian's Dovecot (dovecot-imapd), started on a free
loopback port with its own configuration, a passwd-file user and Maildir storage in a
temporary folder, and stopped afterwards. Mail is put in with IMAP APPEND."""

from __future__ import annotations

import grp
import imaplib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from email.message import EmailMessage
from email.utils import format_datetime
from pathlib import Path

import pytest

DOVECOT = "/usr/sbin/dovecot"
USER = "owner@example.org"
PASSWORD = "imap-secret-password-for-tests"


@dataclass
class Dovecot:
    host: str
    port: int
    folder: Path

    def client(self) -> imaplib.IMAP4:
        imap = imaplib.IMAP4(self.host, self.port, timeout=10)
        imap.login(USER, PASSWORD)
        return imap

    def append(self, mailbox: str, message: bytes) -> None:
        imap = self.client()
        try:
            imap.create(f'"{mailbox}"')  # NO when it exists: fine
            status, data = imap.append(f'"{mailbox}"', None, None, message)
            assert status == "OK", data
        finally:
            imap.logout()

    def recreate(self, mailbox: str) -> None:
        """Delete and create `mailbox` again: a new UIDVALIDITY, UIDs from 1."""
        imap = self.client()
        try:
            imap.delete(f'"{mailbox}"')
            imap.create(f'"{mailbox}"')
        finally:
            imap.logout()

    def log(self) -> str:
        path = self.folder / "dovecot.log"
        return path.read_text(errors="replace") if path.exists() else ""


def mail(
    number: int,
    *,
    sender: str = "ann@example.org",
    to: str = USER,
    subject: str = "Plans",
    text: str = "",
    reply_to: int | None = None,
    references: list[int] | None = None,
    sent: datetime | None = None,
    attachment: tuple[str, bytes] | None = None,
) -> bytes:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    message["Subject"] = subject if reply_to is None else f"Re: {subject}"
    message["Message-ID"] = f"<m{number}@example.org>"
    if reply_to is not None:
        message["In-Reply-To"] = f"<m{reply_to}@example.org>"
        chain = references or [reply_to]
        message["References"] = " ".join(f"<m{n}@example.org>" for n in chain)
    stamp = sent or datetime.fromisoformat("2025-03-01T09:00:00+01:00")
    message["Date"] = format_datetime(stamp.replace(minute=number % 60))
    message.set_content(text or f"message number {number}")
    if attachment is not None:
        name, data = attachment
        message.add_attachment(data, maintype="application", subtype="octet-stream", filename=name)
    return bytes(message)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def dovecot() -> Iterator[Dovecot]:
    if not Path(DOVECOT).exists():
        if os.environ.get("CI"):
            pytest.fail("CI must install dovecot-imapd (Debian package)")
        pytest.skip("dovecot-imapd is not installed here; CI installs it and runs this test")
    # Short paths: Dovecot's sockets live under base_dir, and a socket path has 108 bytes.
    root = Path(tempfile.mkdtemp(prefix="dv"))
    root.chmod(0o755)  # Dovecot's own users read the configuration and the passwd-file
    try:
        for sub in ("run", "state", "home"):
            (root / sub).mkdir()
        (root / "users").write_text(f"{USER}:{{PLAIN}}{PASSWORD}\n")
        port = _free_port()
        if os.getuid() == 0:  # Dovecot never serves mail as root: its own user does
            account = pwd.getpwnam("dovecot")
            mail_uid, mail_gid = account.pw_uid, account.pw_gid
            internal, internal_group, login = "dovecot", "dovecot", "dovenull"
        else:  # one unprivileged user runs everything
            me = pwd.getpwuid(os.getuid()).pw_name
            mail_uid, mail_gid = os.getuid(), os.getgid()
            internal, internal_group, login = me, grp.getgrgid(os.getgid()).gr_name, me
        os.chown(root / "home", mail_uid, mail_gid)
        (root / "dovecot.conf").write_text(
            f"""
protocols = imap
listen = 127.0.0.1
base_dir = {root}/run
state_dir = {root}/state
instance_name = wirecat-{port}
log_path = {root}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
first_valid_uid = {min(mail_uid, 1)}
default_internal_user = {internal}
default_internal_group = {internal_group}
default_login_user = {login}
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {root}/users
}}
userdb {{
  driver = static
  args = uid={mail_uid} gid={mail_gid} home={root}/home/%u
}}
mail_location = maildir:~/Maildir
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service anvil {{
  chroot =
}}
"""
        )
        proc = subprocess.Popen(
            [DOVECOT, "-F", "-c", str(root / "dovecot.conf")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        server = Dovecot(host="127.0.0.1", port=port, folder=root)
        try:
            deadline = time.monotonic() + 15
            while True:
                try:
                    server.client().logout()
                    break
                except (OSError, imaplib.IMAP4.error):
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise AssertionError(f"no dovecot:\n{server.log()[-3000:]}") from None
                    time.sleep(0.1)
            yield server
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    finally:
        shutil.rmtree(root, ignore_errors=True)
