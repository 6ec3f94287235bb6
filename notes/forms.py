"""The editor's form: title, folder (a path), aliases (comma-separated), the Markdown body,
the revision the edit was made from, and for a new note the reference it is about. The
services check the same rules again (as they do for the API); a sentence they raise goes
back to the field it names."""

from __future__ import annotations

from django import forms

from notes.models import TITLE_MAX
from notes.references import ref_parse
from notes.services.notes import BODY_MAX
from wirecat.errors import Invalid


class NoteForm(forms.Form):
    title = forms.CharField(
        required=False,
        max_length=TITLE_MAX,
        error_messages={"max_length": f"A title can be at most {TITLE_MAX} characters."},
    )
    folder = forms.CharField(
        required=False,
        max_length=1000,
        error_messages={"max_length": "A folder's path can be at most 1,000 characters."},
    )
    aliases = forms.CharField(
        required=False,
        max_length=5000,
        error_messages={"max_length": "The aliases can be at most 5,000 characters in all."},
    )
    body = forms.CharField(
        required=False,
        strip=False,
        max_length=BODY_MAX,
        error_messages={"max_length": f"A note can be at most {BODY_MAX:,} characters."},
    )
    revision = forms.IntegerField(
        required=False,
        min_value=1,
        error_messages={"invalid": "The revision this edit was made from is not a number."},
    )
    link = forms.CharField(required=False, max_length=2100)

    def __init__(self, *args: object, editing: bool = False, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.editing = editing

    def clean_title(self) -> str:
        title = " ".join((self.cleaned_data.get("title") or "").split())
        if not title:
            raise forms.ValidationError("Give the note a title.")
        return title

    def clean_folder(self) -> str:
        parts = (self.cleaned_data.get("folder") or "").replace("\\", "/").split("/")
        return "/".join(part.strip() for part in parts if part.strip())

    def clean_aliases(self) -> list[str]:
        text = self.cleaned_data.get("aliases") or ""
        return [" ".join(alias.split()) for alias in text.split(",") if alias.strip()]

    def clean_body(self) -> str:
        return (self.cleaned_data.get("body") or "").replace("\r\n", "\n")

    def clean_revision(self) -> int | None:
        revision = self.cleaned_data.get("revision")
        if self.editing and revision is None:
            raise forms.ValidationError(
                "This edit does not say which revision it was made from: open the editor again."
            )
        return revision

    def clean_link(self) -> str:
        link = (self.cleaned_data.get("link") or "").strip()
        if not link:
            return ""
        try:
            return str(ref_parse(link, field="link"))
        except Invalid as exc:
            raise forms.ValidationError(str(exc)) from exc

    def add_service_error(self, exc: Exception) -> None:
        """A service's sentence, on the field it names ("title: …", "folder 'x': …")."""
        text = str(exc)
        for name in ("title", "body", "aliases", "folder"):
            if text.startswith(name):
                self.add_error(name, text)
                return
        self.add_error(None, text)
