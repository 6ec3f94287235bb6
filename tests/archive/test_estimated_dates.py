"""Messages kept with an estimated date (issue 15), past the importer: the sink writes the
mark and lets an estimate give way only to a real date, `is:estimated` finds them, the chat
page and the search hits say so, and an import counts them (not as skipped) on its page and
in `wirecat import`, the same when it was stopped and resumed."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from archive.imports.models import ImportJob
from archive.imports.services import import_job_create, import_job_resume, import_run
from archive.search.parser import QuerySyntaxError, parse, to_json
from archive.search.selectors import message_search
from archive.store.domain import DATE_ESTIMATED_FROM, MessageRecord
from archive.store.models import Chat, Message
from archive.store.sink import batch_record
from tests.factories import T0, batch, message

pytestmark = pytest.mark.django_db

NOTE = {DATE_ESTIMATED_FROM: "the message before it in the export"}


def estimated(external_id: str, text: str, minutes: int = 0) -> MessageRecord:
    return message(external_id, text, minutes=minutes, date_estimated=True, metadata=dict(NOTE))


# --- the sink ------------------------------------------------------------------------------


def test_the_sink_writes_the_mark_set_wise() -> None:
    result = batch_record(batch=batch(message("1", "real"), estimated("2", "guessed")))
    assert result.added == 2
    rows = dict(Message.objects.values_list("external_id", "date_estimated"))
    assert rows == {"1": False, "2": True}
    guessed = Message.objects.get(external_id="2")
    assert guessed.date_estimate_note == (
        "The export gave no usable date for this message. It was taken from the message"
        " before it in the export."
    )
    assert Message.objects.get(external_id="1").date_estimate_note == ""


def test_an_estimate_gives_way_to_a_real_date_and_the_chat_follows() -> None:
    batch_record(batch=batch(estimated("1", "guessed")))
    later = message("1", "guessed", minutes=90)
    result = batch_record(batch=batch(later))
    assert (result.added, result.updated) == (0, 1)
    stored = Message.objects.get(external_id="1")
    assert (stored.sent_at, stored.date_estimated) == (T0 + timedelta(minutes=90), False)
    assert DATE_ESTIMATED_FROM not in stored.provider_metadata
    assert Chat.objects.get().last_message_at == T0 + timedelta(minutes=90)


def test_another_estimate_or_an_estimate_of_a_real_date_changes_nothing() -> None:
    batch_record(batch=batch(estimated("1", "guessed"), message("2", "real")))
    other = message(
        "1", "guessed", minutes=5, date_estimated=True, metadata={DATE_ESTIMATED_FROM: "x"}
    )
    of_real = message("2", "real", minutes=5, date_estimated=True, metadata=dict(NOTE))
    result = batch_record(batch=batch(other, of_real))
    assert (result.added, result.updated, result.unchanged) == (0, 0, 2)
    first, second = Message.objects.order_by("external_id")
    assert (first.sent_at, first.date_estimated, first.provider_metadata) == (T0, True, NOTE)
    assert (second.sent_at, second.date_estimated, second.provider_metadata) == (T0, False, {})


# --- search --------------------------------------------------------------------------------


def test_is_estimated_parses_and_finds_them() -> None:
    assert to_json(parse("is:estimated")) == {
        "operator": "is",
        "operand": "estimated",
        "negated": False,
    }
    with pytest.raises(QuerySyntaxError, match="estimated"):
        parse("is:guessed")
    batch_record(batch=batch(message("1", "lunch plans"), estimated("2", "lunch maybe", 1)))

    def found(query: str) -> list[str]:
        return [hit.message.external_id for hit in message_search(query=query).hits]

    assert found("is:estimated") == ["2"]
    assert found("lunch is:estimated") == ["2"]
    assert found("lunch -is:estimated") == ["1"]
    assert sorted(found("lunch")) == ["1", "2"]


# --- pages ---------------------------------------------------------------------------------


def test_the_chat_page_and_the_search_hits_mark_an_estimated_date(owner_client: Client) -> None:
    batch_record(batch=batch(message("1", "on time"), estimated("2", "late guess", 1)))
    chat = Chat.objects.get()
    mark = (
        '<span class="badge estimated" title="The export gave no usable date for this message.'
        ' It was taken from the message before it in the export.">date estimated</span>'
    )
    page = owner_client.get(f"/chats/{chat.pk}/").content.decode()
    assert page.count(mark) == 1
    assert page.index("late guess") > page.index(mark) > page.index("on time")
    hits = owner_client.get("/search/", {"q": "guess OR time"}).content.decode()
    assert hits.count(mark) == 1
    assert "is:dm|group|channel|reply|edited|deleted|mine|estimated" in hits


def test_the_api_says_which_dates_are_estimated_and_from_what(owner_client: Client) -> None:
    batch_record(batch=batch(message("1", "on time"), estimated("2", "late guess", 1)))
    chat = Chat.objects.get()
    listed = owner_client.get(f"/api/chats/{chat.pk}/messages").json()["messages"]
    marks = [(m["text"], m["date_estimated"], m["date_estimated_from"]) for m in listed]
    assert marks == [
        ("on time", False, None),
        ("late guess", True, "the message before it in the export"),
    ]
    found = owner_client.get("/api/search/messages", {"q": "is:estimated"}).json()["hits"]
    assert [(hit["text"], hit["date_estimated"]) for hit in found] == [("late guess", True)]


# --- imports -------------------------------------------------------------------------------


def telegram_undated(tmp_path: Path, count: int = 6) -> Path:
    """A Telegram export whose every third message has no date."""
    messages = [
        {"id": i, "type": "message", "from": "Alice", "from_id": "user1", "text": f"m{i}"}
        | ({} if i % 3 == 0 else {"date_unixtime": str(1_709_294_400 + 60 * i)})
        for i in range(1, count + 1)
    ]
    export = tmp_path / "result.json"
    export.write_text(json.dumps({"type": "personal_chat", "id": 7, "messages": messages}))
    return export


def test_an_import_counts_estimated_dates_not_skips(owner_client: Client, tmp_path: Path) -> None:
    export = telegram_undated(tmp_path)
    out = StringIO()
    call_command("import", str(export), stdout=out, stderr=StringIO())
    job = ImportJob.objects.get()
    assert (job.status, job.added, job.estimated, job.skipped) == ("done", 6, 2, {})
    assert "dates estimated 2: kept, the export gave no usable date" in out.getvalue()
    assert "skipped" not in out.getvalue()
    page = owner_client.get(f"/imports/{job.public_id}/").content.decode()
    assert "<dt>Dates estimated</dt><dd>2</dd>" in page
    assert "Skipped" not in page


def times(account: str) -> dict[str, object]:
    found = Message.objects.filter(account__external_id=account)
    return dict(found.values_list("external_id", "sent_at"))


def test_estimated_counts_of_a_resumed_import_match_an_uninterrupted_one(tmp_path: Path) -> None:
    """Message 3 is undated and the first one after the stop: the resumed run reads the
    export again from its start, so its neighbour (message 2, recorded before the stop)
    still dates it."""
    export = telegram_undated(tmp_path)
    whole = import_run(job_id=import_job_create(source=export, account_name="a").pk, batch_size=2)
    assert (whole.status, whole.estimated) == ("done", 2)

    job = import_job_create(source=export, account_name="b", resume=False)

    def stop_after_first_batch(current: ImportJob) -> None:
        if current.position == 2:
            ImportJob.objects.filter(pk=current.pk).update(cancel_requested=True)

    stopped = import_run(job_id=job.pk, batch_size=2, progress=stop_after_first_batch)
    assert (stopped.status, stopped.estimated) == ("cancelled", 0)
    import_job_resume(public_id=job.public_id)
    resumed = import_run(job_id=job.pk, batch_size=2)
    assert (resumed.status, resumed.position, resumed.estimated) == ("done", 6, 2)
    assert times("b") == times("a")
    assert times("b")["3"] == times("b")["2"] and times("b")["6"] == times("b")["5"]
