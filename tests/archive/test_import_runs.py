"""Several export files in one `wirecat import`: one run, each file still its own job (its
counts, its chats, its failure), the next file read while the one before is written."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from archive.imports.models import ImportJob, ImportStatus
from archive.imports.services import import_job_create, import_job_resume, import_run_many
from archive.store.models import Chat, Message

pytestmark = pytest.mark.django_db(transaction=True)


def _chat_export(folder: Path, chat_id: int, count: int, first: int = 1) -> Path:
    messages = [
        {
            "id": n,
            "type": "message",
            "date": "2021-05-01T10:00:00",
            "date_unixtime": str(1_619_863_200 + n),
            "from": f"Person {n % 3}",
            "from_id": f"user{n % 3 + 1}",
            "text": f"chat {chat_id} message {n}",
        }
        for n in range(first, first + count)
    ]
    path = folder / f"chat-{chat_id}" / "result.json"
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps(
            {
                "name": f"Chat {chat_id}",
                "type": "private_group",
                "id": chat_id,
                "messages": messages,
            }
        )
    )
    return path


def test_many_files_import_as_one_run_each_its_own_job(tmp_path: Path) -> None:
    paths = [_chat_export(tmp_path, chat_id, 7 * chat_id) for chat_id in (1, 2, 3, 4)]
    out = StringIO()
    call_command("import", *map(str, paths), "--batch-size", "3", stdout=out, stderr=StringIO())
    jobs = list(ImportJob.objects.order_by("pk"))
    assert [job.status for job in jobs] == [ImportStatus.DONE] * 4
    assert [job.added for job in jobs] == [7, 14, 21, 28]
    assert [list(job.chats.values_list("external_id", flat=True)) for job in jobs] == [
        ["1"],
        ["2"],
        ["3"],
        ["4"],
    ]
    for chat_id in (1, 2, 3, 4):
        texts = Message.objects.filter(chat__external_id=str(chat_id)).values_list(
            "text", flat=True
        )
        assert sorted(texts) == sorted(
            f"chat {chat_id} message {n}" for n in range(1, 7 * chat_id + 1)
        )
    assert out.getvalue().count(": Done") == 4


def test_a_broken_file_fails_alone_and_the_run_goes_on(tmp_path: Path) -> None:
    first = _chat_export(tmp_path, 1, 5)
    broken = _chat_export(tmp_path, 2, 5)
    broken.write_text(broken.read_text()[:-60])  # cut inside its last messages
    last = _chat_export(tmp_path, 3, 5)
    out = StringIO()
    with pytest.raises(CommandError, match="1 of 3 imports did not finish"):
        call_command("import", str(first), str(broken), str(last), stdout=out, stderr=StringIO())
    jobs = {Path(job.source).parent.name: job for job in ImportJob.objects.all()}
    assert jobs["chat-1"].status == jobs["chat-3"].status == ImportStatus.DONE
    assert jobs["chat-2"].status == ImportStatus.FAILED
    assert jobs["chat-2"].errors and "result.json" in jobs["chat-2"].errors[0]
    assert jobs["chat-2"].added == 4  # what came before the fault is kept
    assert Message.objects.filter(chat__external_id="3").count() == 5


def test_a_run_cancelled_midway_resumes_each_file_where_it_stopped(tmp_path: Path) -> None:
    paths = [_chat_export(tmp_path, chat_id, 6) for chat_id in (1, 2, 3)]
    jobs = [import_job_create(source=path) for path in paths]

    def cancel_in_second(current: ImportJob) -> None:
        if current.pk == jobs[1].pk and current.position == 2:
            ImportJob.objects.filter(pk=current.pk).update(cancel_requested=True)

    ended = import_run_many(
        job_ids=[job.pk for job in jobs], progress=cancel_in_second, batch_size=2
    )
    assert [(job.status, job.position) for job in ended] == [
        (ImportStatus.DONE, 6),
        (ImportStatus.CANCELLED, 2),
        (ImportStatus.DONE, 6),
    ]
    import_job_resume(public_id=jobs[1].public_id)  # as the Imports page's Resume does
    out = StringIO()
    call_command("import", *map(str, paths), stdout=out, stderr=StringIO())
    again = list(ImportJob.objects.order_by("pk"))
    # The cancelled job resumed; the finished files made new jobs that changed nothing.
    assert len(again) == 5
    assert (again[1].status, again[1].position, again[1].added) == (ImportStatus.DONE, 6, 6)
    assert [(job.added, job.unchanged) for job in again[3:]] == [(0, 6), (0, 6)]
    assert Message.objects.count() == 18
    assert Chat.objects.count() == 3
    assert f"Resuming {jobs[1].public_id} after 2 messages" in out.getvalue()


def test_the_next_file_changed_meanwhile_is_read_from_its_own_start(
    tmp_path: Path, settings: Any
) -> None:
    """A job whose position moved after its reader was opened ahead is read afresh."""
    paths = [_chat_export(tmp_path, chat_id, 4) for chat_id in (1, 2)]
    jobs = [import_job_create(source=path) for path in paths]

    def second_moves(current: ImportJob) -> None:
        if current.pk == jobs[0].pk and current.status == ImportStatus.DONE:
            ImportJob.objects.filter(pk=jobs[1].pk).update(position=1)

    ended = import_run_many(job_ids=[job.pk for job in jobs], progress=second_moves, batch_size=2)
    assert [job.status for job in ended] == [ImportStatus.DONE, ImportStatus.DONE]
    assert ended[1].added == 3  # its first message counted as recorded: passed over


def _children() -> set[int]:
    """This process's child processes now (any thread's: Linux lists them per thread)."""
    found: set[int] = set()
    for listing in Path("/proc/self/task").glob("*/children"):
        found.update(int(pid) for pid in listing.read_text().split())
    return found


@pytest.mark.parametrize("whole", [True, False], ids=["held whole", "streamed"])
def test_a_file_parsed_whole_is_read_without_a_child(
    tmp_path: Path, settings: Any, whole: bool
) -> None:
    """A file small enough to parse whole is read in the importing process (a forked
    reader's pickling and copied pages cost more than they save); a streamed one in a
    forked child, while this process writes."""
    settings.IMPORT_READER_PROCESS = True
    settings.IMPORT_WHOLE_FILE = 4 << 20 if whole else 0
    paths = [_chat_export(tmp_path, chat_id, 6) for chat_id in (1, 2)]
    before = _children()  # the session's own (a browser, a server) are not the import's
    seen: list[bool] = []
    ended = import_run_many(
        job_ids=[import_job_create(source=path).pk for path in paths],
        progress=lambda job: seen.append(bool(_children() - before)),
        batch_size=2,
    )
    assert [job.added for job in ended] == [6, 6]
    assert any(seen) is not whole
