"""The Imports page's form: an uploaded export or a path on the server, and its format."""

from __future__ import annotations

from typing import Any

from django import forms


class ImportForm(forms.Form):
    file = forms.FileField(
        required=False,
        label="Upload an export",
        help_text="Telegram result.json, DiscordChatExporter .json, WhatsApp .txt or .zip, "
        "chat.db, mbox or .eml, Slack export .zip; a calendar .ics; a transcript .vtt or .srt, "
        "or a Zoom chat .txt.",
    )
    path = forms.CharField(
        required=False,
        label="…or a path on this server",
        help_text="A file or folder, e.g. ~/Downloads/Telegram Desktop/ChatExport_2024-05-01",
        widget=forms.TextInput(attrs={"placeholder": "/home/me/exports/result.json"}),
    )
    format = forms.ChoiceField(required=False, label="Format", initial="")
    account = forms.CharField(
        required=False,
        max_length=255,
        label="Account name",
        help_text="Optional: the name of your account these messages belong to.",
    )
    meeting = forms.CharField(
        required=False,
        max_length=300,
        label="Attach a transcript to a meeting",
        help_text="Optional, for a transcript: the meeting's id (mtg_…) or its page's address."
        " Without it, the transcript joins the meeting its time overlaps.",
    )
    recording_start = forms.DateTimeField(
        required=False,
        label="The recording began at",
        help_text="Optional, for a transcript whose file does not say when it was recorded"
        " (your time zone).",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
    )

    def __init__(self, *args: Any, formats: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["format"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", "Detect from the content"), *formats.items()]

    def clean(self) -> dict[str, Any]:
        data: dict[str, Any] = super().clean() or {}
        if not data.get("file") and not (data.get("path") or "").strip():
            raise forms.ValidationError("Choose a file to upload or name a path on the server.")
        if data.get("file") and (data.get("path") or "").strip():
            raise forms.ValidationError("Either upload a file or name a path, not both.")
        return data
