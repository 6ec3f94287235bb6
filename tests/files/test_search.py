"""Files' text in the messages' search: `content:`, `transcript:`, `filename:`,
`is:needs_text`, `has:text`, and where a hit matched, on messages written by the sink and
text rows written through the ORM (the triggers index them)."""

from __future__ import annotations

import html
import json
from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext

from archive.files.models import AttachmentText
from archive.search import windows
from archive.search.parser import QuerySyntaxError, parse, to_json
from archive.search.selectors import message_search
from archive.store.domain import AttachmentRecord, DeletionRecord
from archive.store.models import Attachment, Message
from archive.store.sink import batch_record
from tests.factories import T0, batch, message

INVOICE_TEXT = (
    "Acme Ltd\nStatement of account\f"
    "Terms and conditions apply\f"
    "The invoice total is due within thirty days\f"
)


def _file(name: str, mime: str) -> tuple[AttachmentRecord, ...]:
    return (AttachmentRecord(external_id=name, file_name=name, mime_type=mime),)


def _text(message_id: str, text: str, *, state: str = "done", extractor: str = "pypdf") -> None:
    attachment = Attachment.objects.get(message__external_id=message_id)
    AttachmentText.objects.create(
        attachment=attachment,
        text=text,
        state=state,
        extractor=extractor,
        made_at=datetime.now(UTC),
    )


@pytest.fixture
def files(db: None) -> dict[str, Message]:
    batch_record(
        batch=batch(
            message(
                "pdf",
                "here is the statement",
                minutes=1,
                attachments=_file("invoice-2024.pdf", "application/pdf"),
            ),
            message(
                "memo",
                "see attached",
                minutes=2,
                attachments=_file("memo.docx", "application/vnd.openxmlformats-officedocument"),
            ),
            message("voice", "", minutes=3, attachments=_file("note.ogg", "audio/ogg")),
            message(
                "scan",
                "a photo of the receipt",
                minutes=4,
                attachments=_file("scan.jpg", "image/jpeg"),
            ),
            message("plain", "the invoice arrived, budget is fine", minutes=5),
            message(
                "stored",
                "no text yet",
                minutes=6,
                attachments=_file("later.pdf", "application/pdf"),
            ),
        )
    )
    _text("pdf", INVOICE_TEXT)
    _text("memo", "Quarterly budget numbers for the board")
    _text("voice", "call the plumber about the invoice tomorrow", extractor="speech:whisper")
    _text("scan", "", state="needs_text", extractor="")
    return {m.external_id: m for m in Message.objects.all()}


def _found(query: str) -> list[str]:
    return [hit.message.external_id for hit in message_search(query=query, limit=100).hits]


def test_content_finds_a_message_by_its_files_text(files: dict[str, Message]) -> None:
    # The message's own text does not count for content: ("plain" says invoice itself).
    assert sorted(_found("content:invoice")) == ["pdf", "voice"]
    assert _found("content:budget") == ["memo"]
    assert _found("content:quarter*") == ["memo"]
    assert _found('content:"total is due"') == ["pdf"]
    assert _found('content:"due total"') == []
    assert _found("content:invoice-2024") == []  # words of a file's text, not its name
    assert _found("statement content:invoice") == ["pdf"]  # with the message's own words
    assert sorted(_found("has:attachment -content:invoice")) == ["memo", "scan", "stored"]
    assert _found("content:invoice OR content:budget") == ["voice", "memo", "pdf"]


def test_transcript_reads_voice_notes_only(files: dict[str, Message]) -> None:
    assert _found("transcript:plumber") == ["voice"]
    assert _found("transcript:invoice") == ["voice"]  # not the PDF's invoice
    assert _found("transcript:budget") == []
    assert _found("content:plumber") == ["voice"]  # a transcript is a file's text too


def test_filename_and_the_text_states(files: dict[str, Message]) -> None:
    assert _found("filename:invoice") == ["pdf"]
    assert _found("is:needs_text") == ["scan"]  # a stored file with no text row is not
    assert sorted(_found("has:text")) == ["memo", "pdf", "voice"]
    assert sorted(_found("has:attachment -has:text")) == ["scan", "stored"]


def test_a_hit_says_which_file_and_page_it_matched_in(files: dict[str, Message]) -> None:
    (hit,) = message_search(query="content:total").hits
    assert hit.matched_in is not None
    attachment = Attachment.objects.get(message__external_id="pdf")
    assert hit.matched_in.attachment == attachment.public_id
    assert hit.matched_in.file_name == "invoice-2024.pdf"
    assert hit.matched_in.page == 3
    assert [part.text for part in hit.matched_in.snippet if part.hit] == ["total"]
    assert "\f" not in "".join(part.text for part in hit.matched_in.snippet)
    (first_page,) = message_search(query="content:acme").hits
    assert first_page.matched_in is not None and first_page.matched_in.page == 1
    # A text without pages has no page; a hit not found in a file says nothing of one.
    (voice,) = message_search(query="transcript:plumber").hits
    assert voice.matched_in is not None
    assert (voice.matched_in.file_name, voice.matched_in.page) == ("note.ogg", None)
    (plain,) = message_search(query="budget is fine").hits
    assert plain.matched_in is None


def test_a_bare_word_finds_files_text_after_messages_own_text(files: dict[str, Message]) -> None:
    # "plain" says invoice itself; the voice note's transcript ranks before the PDF's text.
    assert _found("invoice") == ["plain", "voice", "pdf"]
    assert _found('"total is due"') == ["pdf"]
    assert _found("quarterly board") == ["memo"]  # both words in one file's text
    assert _found("invoice -plumber") == ["plain", "pdf"]
    # The PDF is found by its name (invoice-2024.pdf) too: a name ranks before a file's text.
    assert _found("invoice OR quarterly") == ["plain", "voice", "pdf", "memo"]
    hits = message_search(query="invoice", limit=100).hits
    assert [hit.matched_in.file_name if hit.matched_in else None for hit in hits] == [
        None,
        "note.ogg",
        "invoice-2024.pdf",
    ]
    newest = message_search(query="invoice", sort="newest", limit=100).hits
    assert [hit.message.external_id for hit in newest] == ["plain", "voice", "pdf"]
    assert _found("budget") == ["plain", "memo"]


@pytest.mark.parametrize("sort", ["relevance", "newest", "oldest"])
def test_a_bare_word_pages_through_every_tier_in_tiny_windows(
    files: dict[str, Message], monkeypatch: pytest.MonkeyPatch, sort: str
) -> None:
    whole = [hit.message.pk for hit in message_search(query="invoice", sort=sort, limit=100).hits]
    monkeypatch.setattr(windows, "WINDOW", 1)
    monkeypatch.setattr(windows, "WINDOW_MAX", 2)
    monkeypatch.setattr(windows, "SMALL", 0)
    monkeypatch.setattr(windows, "CHUNK", 1)
    paged: list[int] = []
    cursor = None
    while True:
        page = message_search(query="invoice", sort=sort, limit=1, cursor=cursor)
        paged.extend(hit.message.pk for hit in page.hits)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert sorted(paged) == sorted(whole) and len(paged) == 3
    if sort != "relevance":  # by time, the order is the whole answer's
        assert paged == whole


def test_a_tombstoned_messages_file_text_is_gone(files: dict[str, Message]) -> None:
    batch_record(batch=batch(deletions=(DeletionRecord("chat-1", "pdf", T0 + timedelta(hours=1)),)))
    assert _found("content:total") == []
    assert _found("content:total is:deleted") == []
    assert _found("total") == []
    assert not AttachmentText.objects.filter(attachment__message__external_id="pdf").exists()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM attachment_words WHERE attachment_words MATCH 'total'")
        assert cursor.fetchone()[0] == 0


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("content:", "content: needs a value"),
        ('content:"..."', "content: needs a word of the file's text"),
        ("transcript:*", "transcript: needs a word of the file's text"),
        ("is:needs", "is: takes dm, group, channel, reply, edited, deleted, mine, estimated"),
        ("has:texts", "has: takes attachment, link, file, voice, image, text"),
    ],
)
def test_file_operators_parse_errors_are_sentences(query: str, problem: str) -> None:
    with pytest.raises(QuerySyntaxError) as caught:
        parse(query)
    assert caught.value.problem.startswith(problem)


def test_the_file_operators_parse() -> None:
    assert to_json(parse('content:"a phrase"')) == {
        "operator": "content",
        "operand": "a phrase",
        "negated": False,
        "exact": True,
    }
    assert to_json(parse("-transcript:call")) == {
        "operator": "transcript",
        "operand": "call",
        "negated": True,
    }
    assert to_json(parse("is:NEEDS_TEXT has:text")) == {
        "operator": "and",
        "operands": [
            {"operator": "is", "operand": "needs_text", "negated": False},
            {"operator": "has", "operand": "text", "negated": False},
        ],
        "negated": False,
    }


def test_notes_and_meetings_refuse_the_file_operators(owner_client: Any) -> None:
    for path in ("/api/search/notes", "/api/search/meetings"):
        response = owner_client.get(path, {"q": "content:invoice"})
        assert response.status_code == 422, path


def test_the_api_gives_where_a_hit_matched(owner_client: Any, files: dict[str, Message]) -> None:
    body = owner_client.get("/api/search/messages", {"q": "content:total"}).json()
    (hit,) = body["hits"]
    attachment = Attachment.objects.get(message__external_id="pdf")
    assert hit["matched_in"]["attachment"] == attachment.public_id
    assert hit["matched_in"]["file_name"] == "invoice-2024.pdf"
    assert hit["matched_in"]["page"] == 3
    assert {"text": "total", "hit": True} in hit["matched_in"]["snippet"]
    plain = owner_client.get("/api/search/messages", {"q": "budget is fine"}).json()
    assert plain["hits"][0]["matched_in"] is None
    schema = owner_client.get("/api/openapi.json").json()["components"]["schemas"]
    assert "matched_in" in schema["SearchHitOut"]["properties"]


def test_the_command_says_where_a_hit_matched(files: dict[str, Message]) -> None:
    out = StringIO()
    call_command("search", "content:total", stdout=out, no_color=True)
    assert "in invoice-2024.pdf, page 3: " in out.getvalue()
    out = StringIO()
    call_command("search", "content:total", "--json", stdout=out)
    (line,) = [json.loads(line) for line in out.getvalue().splitlines()]
    assert line["matched_in"]["page"] == 3


def test_the_page_says_in_which_file_escaped(owner_client: Any, db: None) -> None:
    name = '<b>bold</b> "deal".pdf'
    batch_record(
        batch=batch(message("x", "the contract", attachments=_file(name, "application/pdf")))
    )
    _text("x", "cover\fsigned by <script>alert(1)</script> both parties")
    page = owner_client.get("/search/", {"q": "content:signed"}).content.decode()
    assert f"in {html.escape(name)}, page 2: " in page
    assert "<script>alert(1)" not in page
    assert "<mark>signed</mark> by &lt;script&gt;" in page


# --- files' names in a plain word's union ---------------------------------------------


@pytest.fixture
def names(db: None) -> dict[str, Message]:
    # Oldest first, the reverse of the order the tiers rank them in.
    batch_record(
        batch=batch(
            message("own", "the zebra report", minutes=1),
            message("voice", "", minutes=2, attachments=_file("note.ogg", "audio/ogg")),
            message(
                "named",
                "see this",
                minutes=3,
                attachments=_file("zebra-2024.pdf", "application/pdf"),
            ),
            message("texted", "notes", minutes=4, attachments=_file("notes.txt", "text/plain")),
        )
    )
    _text("voice", "the zebra crossing at noon", extractor="speech:whisper")
    _text("texted", "zebra stripes are black and white", extractor="text")
    return {m.external_id: m for m in Message.objects.all()}


def test_a_word_in_a_file_name_ranks_after_transcripts_before_files_text(
    names: dict[str, Message],
) -> None:
    assert _found("zebra") == ["own", "voice", "named", "texted"]
    assert _found("2024") == ["named"]  # only a name holds it
    assert _found("zebr*") == ["own", "voice", "named", "texted"]
    assert _found('"zebra 2024"') == ["named"]
    assert _found("zebra 2024") == ["named"]  # both words in one name
    newest = message_search(query="zebra", sort="newest", limit=100).hits
    assert [hit.message.external_id for hit in newest] == ["texted", "named", "voice", "own"]
    # The whole-WHERE shapes look in names too, a word on its own.
    assert sorted(_found("has:attachment -2024")) == ["texted", "voice"]
    assert sorted(_found("2024 OR has:voice")) == ["named", "voice"]
    # filename: still reads the names by LIKE; content: reads files' text alone.
    assert _found("content:2024") == []


def test_a_hit_found_by_a_name_says_which_file(names: dict[str, Message]) -> None:
    (hit,) = message_search(query="2024").hits
    assert hit.matched_in is not None
    attachment = Attachment.objects.get(message__external_id="named")
    assert hit.matched_in.attachment == attachment.public_id
    assert (hit.matched_in.file_name, hit.matched_in.page) == ("zebra-2024.pdf", None)
    assert "".join(part.text for part in hit.matched_in.snippet) == "zebra-2024.pdf"
    assert [part.text for part in hit.matched_in.snippet if part.hit] == ["2024"]
    hits = message_search(query="zebra", limit=100).hits
    assert [hit.matched_in.file_name if hit.matched_in else None for hit in hits] == [
        None,
        "note.ogg",
        "zebra-2024.pdf",
        "notes.txt",
    ]


def test_both_words_of_a_hyphenated_name_find_it(db: None) -> None:
    batch_record(
        batch=batch(
            message("one", "hi", attachments=_file("invoice-2024.pdf", "application/pdf")),
            message(
                "split",
                "hello",
                minutes=1,
                attachments=(
                    AttachmentRecord(external_id="a", file_name="invoice.pdf"),
                    AttachmentRecord(external_id="b", file_name="2024.txt"),
                ),
            ),
        )
    )
    assert _found("invoice") == ["split", "one"]
    assert _found("2024") == ["split", "one"]
    assert _found("invoice 2024") == ["one"]  # all the words in one name


def test_renaming_or_deleting_a_file_keeps_the_names_index(names: dict[str, Message]) -> None:
    attachment = Attachment.objects.get(message__external_id="named")
    Attachment.objects.filter(pk=attachment.pk).update(file_name="okapi-2025.pdf")
    assert _found("2024") == []
    assert _found("okapi") == ["named"]
    attachment.delete()
    assert _found("okapi") == []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM attachment_names WHERE attachment_names MATCH 'okapi OR zebra'"
        )
        assert cursor.fetchone()[0] == 0


def test_an_archive_without_files_runs_no_file_sql(db: None) -> None:
    batch_record(batch=batch(message("a", "the zebra report"), message("b", "zebra", minutes=1)))
    for sort in ("relevance", "newest"):
        with CaptureQueriesContext(connection) as queries:
            assert len(message_search(query="zebra", sort=sort).hits) == 2
            assert len(message_search(query="zebra -report OR zeb*", sort=sort).hits) >= 1
        sql = " ".join(query["sql"] for query in queries.captured_queries)
        for name in ("attachment_names", "attachment_words", "file_names", "file_texts"):
            assert name not in sql, (sort, name)


def test_a_name_costs_one_more_index_read_once_files_exist(names: dict[str, Message]) -> None:
    with CaptureQueriesContext(connection) as queries:
        message_search(query="okapi")
    window = [
        q["sql"] for q in queries.captured_queries if "file_names AS MATERIALIZED" in q["sql"]
    ]
    assert len(window) == 1 and window[0].count("attachment_names MATCH") == 1


@pytest.mark.django_db(transaction=True)
def test_the_migration_indexes_the_names_already_stored() -> None:
    batch_record(batch=batch(message("a", "hi", attachments=_file("okapi.pdf", "application/pdf"))))
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    executor.migrate([("archive", "0028_attachment_text")])
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM sqlite_master WHERE name = 'attachment_names'")
            assert cursor.fetchone()[0] == 0
    finally:
        MigrationExecutor(connection).migrate(latest)
    assert _found("okapi") == ["a"]
