"""`wirecat search --notes`: the notes search in a shell, as the page and the API run it."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from notes.services.notes import note_create

pytestmark = pytest.mark.django_db


def test_the_search_command_takes_notes() -> None:
    note = note_create(title="Roof plan", body="The roofer comes on the 20th.", folder="Home")
    note_create(title="Garden", body="Nothing about it.")
    out = StringIO()
    call_command("search", "roofer", "--notes", stdout=out)
    printed = out.getvalue()
    assert note.public_id in printed and "Roof plan  in Home" in printed
    assert "Garden" not in printed
    out = StringIO()
    call_command("search", "roofer", "--notes", "--json", stdout=out)
    [hit] = [json.loads(line) for line in out.getvalue().splitlines()]
    assert (hit["id"], hit["folder"]) == (note.public_id, "Home")
    assert "roofer" in hit["snippet"]
    out = StringIO()
    call_command("search", "nothingmatches", "--notes", stdout=out)
    assert "No notes match." in out.getvalue()
    with pytest.raises(CommandError, match="from: is for messages"):
        call_command("search", "from:ann roofer", "--notes", stdout=StringIO())
    with pytest.raises(CommandError):
        call_command("search", "x", "--notes", "--meetings", stdout=StringIO())
