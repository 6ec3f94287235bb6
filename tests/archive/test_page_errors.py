"""Page errors are mapped once: a `WireCatError` a page raises becomes the error page with
its message and its status (only the message for htmx), in one middleware; views raise.
The API keeps its own JSON mapping; any other exception stays a 500."""

from __future__ import annotations

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import Client, RequestFactory

from archive.store.models import Chat
from archive.store.sink import batch_record
from archive.web.middleware import PageErrors
from tests.factories import batch, message
from wirecat.errors import Conflict, Forbidden, Invalid, NotFound, WireCatError

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def chat(db: None) -> Chat:
    batch_record(batch=batch(message("1", "hello"), message("2", "again", minutes=1)))
    return Chat.objects.get()


@pytest.mark.parametrize(
    ("url", "status", "title", "said"),
    [
        ("/chats/999/", 404, "Not found", "chat 999 does not exist"),
        ("/m/msg_nope/", 404, "Not found", "message &#x27;msg_nope&#x27; does not exist"),
        ("/m/msg_nope/revisions/", 404, "Not found", "does not exist"),
        ("/people/999/", 404, "Not found", "person 999 does not exist"),
        ("/imports/imp_nope/", 404, "Not found", "does not exist"),
        ("/tags/all/999/", 404, "Not found", "tag-all run 999 does not exist"),
        ("/attachments/att_nope/", 404, "Not found", "attachment &#x27;att_nope&#x27;"),
        ("/chats/{chat}/?before=garbage", 422, "That did not work", "not a valid page cursor"),
    ],
)
def test_a_domain_error_in_a_page_is_the_error_page_with_its_status_and_message(
    owner_client: Client, chat: Chat, url: str, status: int, title: str, said: str
) -> None:
    url = url.format(chat=chat.pk)
    page = owner_client.get(url)
    assert page.status_code == status, url
    html = page.content.decode()
    assert "<html" in html and f"<h1>{title}</h1>" in html and said in html, url

    fragment = owner_client.get(url, **HX)
    assert fragment.status_code == status, url
    html = fragment.content.decode()
    assert "<html" not in html and "<h1>" not in html, url
    assert html.strip().startswith('<p class="error" role="alert">') and said in html, url


def test_posted_forms_get_the_same_mapping(owner_client: Client, chat: Chat) -> None:
    gone = owner_client.post("/tags/999/edit/", {"action": "delete"})
    assert gone.status_code == 404 and "tag 999 does not exist" in gone.content.decode()
    bad = owner_client.post("/tags/add/", {"kind": "<b>", "key": "1", "name": "a"}, **HX)
    assert bad.status_code == 422
    assert "&lt;b&gt;" in bad.content.decode() and "<html" not in bad.content.decode()
    undo = owner_client.post("/tags/all/999/undo/")
    assert undo.status_code == 404 and "tag-all run 999" in undo.content.decode()
    saved = owner_client.post("/search/saved/999/delete/")
    assert saved.status_code == 404 and "saved search 999" in saved.content.decode()
    agent = owner_client.post("/agents/agt_nope/", {"action": "revoke"})
    assert agent.status_code == 404 and "<h1>Not found</h1>" in agent.content.decode()
    send = owner_client.post("/sends/snd_nope/", {"decision": "approve"}, **HX)
    assert send.status_code == 404 and "<html" not in send.content.decode()
    hook = owner_client.get("/webhooks/999/")
    assert hook.status_code == 404 and "<h1>Not found</h1>" in hook.content.decode()
    sync = owner_client.post("/sync/sync_nope/", {"action": "now"})
    assert sync.status_code == 404 and "no live account" in sync.content.decode()


def test_forms_that_explain_inline_keep_doing_so(owner_client: Client, chat: Chat) -> None:
    # A form that shows its own problem is not the error page: the middleware never sees it.
    bad = owner_client.post(
        "/tags/add/", {"kind": "chat", "key": chat.pk, "name": "  "}, **HX, follow=False
    )
    assert bad.status_code == 422 and 'id="tags-chat-' in bad.content.decode()
    syntax = owner_client.get("/search/", {"q": '"unclosed'})
    assert syntax.status_code == 200 and "<h1>That did not work</h1>" not in syntax.content.decode()


def test_the_api_keeps_its_json_answers(owner_client: Client) -> None:
    response = owner_client.get("/api/chats/999/messages")
    assert response.status_code == 404
    assert response.json() == {"error": "NotFound", "detail": "chat 999 does not exist"}


@pytest.mark.parametrize("error", [NotFound("x"), Invalid("x"), Forbidden("x"), Conflict("x")])
def test_the_middleware_maps_every_domain_error_by_its_status(
    owner: object, error: WireCatError
) -> None:
    request = RequestFactory().get("/anything/")
    request.user = owner  # type: ignore[assignment]
    answer = PageErrors(lambda r: HttpResponse()).process_exception(request, error)
    assert answer is not None and answer.status_code == error.http_status


def test_other_exceptions_are_left_to_django(owner_client: Client) -> None:
    request: HttpRequest = RequestFactory().get("/")
    assert PageErrors(lambda r: HttpResponse()).process_exception(request, ValueError()) is None
    assert PageErrors(lambda r: HttpResponse()).process_exception(request, KeyError()) is None
