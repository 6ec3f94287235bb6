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
    assert _found("invoice OR quarterly") == ["plain", "voice", "memo", "pdf"]  # newer first
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
