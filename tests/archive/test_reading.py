"""Reading an export in a child process: the same items as reading in-process, errors
where they happened, skips for resumes, and a child that never outlives its import."""

from __future__ import annotations

import multiprocessing
import os
import time
import zipfile
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from archive.connectors.base import ExportStream, FormatError, ImportItem, ReadOptions
from archive.connectors.registry import reader_for
from archive.imports.reading import ExportItems
from archive.store.domain import AccountRecord, ChatRecord, MessageRecord

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ACCOUNT = AccountRecord(provider="test", external_id="acc", name="Test")
CHAT = ChatRecord(external_id="c1", kind="dm", title="Chat")


def counted(total: int | None, fail_after: int | None = None) -> ExportStream:
    """A minimal reader: numbered items saying which process made them."""
    skipped: Counter[str] = Counter()

    def items() -> Iterator[ImportItem]:
        number = 0
        while total is None or number < total:
            number += 1
            if fail_after is not None and number > fail_after:
                raise FormatError("export.json", f"message #{number}", "not a message")
            if number % 10 == 0:
                skipped["every tenth is odd"] += 1
            yield ImportItem(
                chat=CHAT,
                message=MessageRecord(
                    chat_external_id="c1",
                    external_id=str(number),
                    sent_at=datetime(2024, 1, 1, tzinfo=UTC),
                    metadata={"pid": os.getpid()},
                ),
            )

    return ExportStream(format="test", account=ACCOUNT, items=items(), skipped=skipped)


def test_the_child_reads_and_the_parent_gets_every_item_in_order() -> None:
    source = ExportItems(counted(1_234), in_child=True)
    try:
        got = list(source)
    finally:
        source.close()
    assert [item.message.external_id for item in got] == [str(n) for n in range(1, 1_235)]
    assert {item.message.metadata["pid"] for item in got} != {os.getpid()}
    assert source.read == 1_234
    assert source.skipped == {"every tenth is odd": 123}


@pytest.mark.parametrize("in_child", [True, False])
def test_skip_passes_over_what_an_earlier_run_recorded(in_child: bool) -> None:
    source = ExportItems(counted(1_000), skip=990, in_child=in_child)
    try:
        got = [item.message.external_id for item in source]
    finally:
        source.close()
    assert got == [str(n) for n in range(991, 1_001)]
    assert source.read == 1_000


@pytest.mark.parametrize("in_child", [True, False])
def test_a_reader_error_arrives_after_the_items_before_it(in_child: bool) -> None:
    source = ExportItems(counted(None, fail_after=777), in_child=in_child)
    got: list[str] = []
    with pytest.raises(FormatError) as caught:
        for item in source:
            got.append(item.message.external_id)
    source.close()
    assert got == [str(n) for n in range(1, 778)]
    assert source.read == 777
    assert str(caught.value) == "export.json, message #778: not a message"
    assert caught.value.position == "message #778"


def test_closing_early_stops_a_child_that_would_read_forever() -> None:
    source = ExportItems(counted(None), in_child=True)
    items = iter(source)
    for _ in range(10):
        next(items)
    assert source.child_alive()
    pid = source._pid
    assert pid is not None
    started = time.monotonic()
    source.close()
    assert time.monotonic() - started < 5
    assert not source.child_alive()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped, not a zombie


def whatsapp_zip(tmp_path: Path) -> Path:
    path = tmp_path / "WhatsApp Chat - Familie.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("_chat.txt", (FIXTURES / "whatsapp" / "ios_familie_chat.txt").read_bytes())
        archive.writestr("00000012-PHOTO-2022-01-03-18-02-00.jpg", b"\xff\xd8 a photo \xff\xd9")
    return path


@pytest.mark.parametrize(
    "export",
    [
        FIXTURES / "telegram" / "personal_2020",
        FIXTURES / "mail" / "threads.mbox",
        FIXTURES / "mail" / "charsets.mbox",
        "whatsapp-zip",
    ],
    ids=["telegram-with-media", "mbox-threads", "mbox-charsets", "whatsapp-zip-with-media"],
)
def test_a_real_export_reads_the_same_in_a_child(export: Path | str, tmp_path: Path) -> None:
    path = whatsapp_zip(tmp_path) if export == "whatsapp-zip" else Path(export)
    results = {}
    for in_child in (True, False):
        stream = reader_for(path).open(path, ReadOptions())
        source = ExportItems(stream, in_child=in_child)
        try:
            items = list(source)
            # Attachment openers crossed the pipe and still open the export's bytes.
            contents = [
                attachment.content().read() if attachment.content else None
                for item in items
                for attachment in item.message.attachments
            ]
        finally:
            source.close()
            if stream.close is not None:
                stream.close()
        results[in_child] = (items, contents, source.read, source.skipped)
    child, local = results[True], results[False]
    assert child[0] == local[0]
    assert child[1] == local[1]
    assert child[2:] == local[2:]
    assert child[0], "the export yielded nothing"
    if export in ("whatsapp-zip", FIXTURES / "telegram" / "personal_2020"):
        assert any(content for content in child[1]), "no attachment bytes were read"


def _read_in_a_daemon(results: Any) -> None:
    source = ExportItems(counted(600), in_child=True)
    try:
        pids = {item.message.metadata["pid"] for item in source}
    finally:
        source.close()
    results.put((os.getpid(), sorted(pids), source.read))


def test_a_daemonic_process_still_reads_in_a_child() -> None:
    """A Celery prefork worker is a daemonic process; multiprocessing would refuse it a
    child, and the import would quietly lose its second core."""
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    daemon = context.Process(target=_read_in_a_daemon, args=(results,), daemon=True)
    daemon.start()
    daemon_pid, reader_pids, read = results.get(timeout=60)
    daemon.join(timeout=60)
    assert read == 600
    assert reader_pids and daemon_pid not in reader_pids
