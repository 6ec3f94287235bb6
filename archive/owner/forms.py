"""The form that sets the owner's password from a one-time login link."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.functional import lazy

from archive.owner.services import password_rule


class SetPasswordForm(forms.Form):
    password1 = forms.CharField(
        label="New password",
        strip=False,
        help_text=lazy(password_rule, str)(),
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password", "autofocus": True}),
    )
    password2 = forms.CharField(
        label="Repeat it",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    def clean(self) -> dict[str, Any]:
        data: dict[str, Any] = super().clean() or {}
        if data.get("password1") and data.get("password1") != data.get("password2"):
            self.add_error("password2", "The two passwords differ.")
        return data
