"""The notes pages (being built: list, note, editor)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from notes.services.notes import note_get


def note_list(request: HttpRequest) -> HttpResponse:
    return HttpResponse("notes")


def note_new(request: HttpRequest) -> HttpResponse:
    return HttpResponse("new note")


def note_detail(request: HttpRequest, public_id: str) -> HttpResponse:
    note = note_get(public_id)
    return HttpResponse(note.title)


def note_edit(request: HttpRequest, public_id: str) -> HttpResponse:
    return redirect("notes:note", public_id=public_id)
