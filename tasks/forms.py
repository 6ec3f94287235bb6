"""The task pages' forms: a new task (into a project, or into a new one made in the same
submit when there is none yet) and a new project. Every error is a sentence that says what
to do; the services check the same rules again, as they do for the API."""

from __future__ import annotations

import re
from typing import Any

from django import forms

from tasks.models import Priority, Project
from tasks.services import TITLE_MAX

PROJECT_KEY = re.compile(r"^[A-Z][A-Z0-9]{1,9}$")


def clean_project_key(value: str) -> str:
    """A new project's key, upper-cased; a sentence for a key that cannot be one."""
    key = value.strip().upper()
    if not key:
        raise forms.ValidationError("Give the new project a short key, like HOME.")
    if not PROJECT_KEY.match(key):
        raise forms.ValidationError(
            "A project key is 2 to 10 letters or digits, starting with a letter, "
            "with no spaces — like HOME or WORK2."
        )
    existing = Project.objects.filter(key=key).first()
    if existing is not None:
        hint = " (it is archived)" if existing.archived else ""
        raise forms.ValidationError(f"There is already a project {key}{hint}. Choose another key.")
    return key


def clean_project_name(value: str) -> str:
    name = " ".join(value.split())
    if not name:
        raise forms.ValidationError("Give the new project a name, like Home.")
    return name


class ProjectForm(forms.Form):
    """A project of its own (the Tasks page's "New project")."""

    key = forms.CharField(required=False)
    name = forms.CharField(
        max_length=200,
        required=False,
        error_messages={"max_length": "A project name can be at most 200 characters."},
    )

    def clean_key(self) -> str:
        return clean_project_key(self.cleaned_data.get("key") or "")

    def clean_name(self) -> str:
        return clean_project_name(self.cleaned_data.get("name") or "")


class TaskNewForm(forms.Form):
    """A new task. With `projects` it goes into one of them; without, the owner names a new
    project (key and name) and both are made in one submit."""

    project = forms.ChoiceField(required=False)
    # The key's length is part of its rule (clean_project_key), said in one sentence.
    project_key = forms.CharField(required=False)
    project_name = forms.CharField(
        max_length=200,
        required=False,
        error_messages={"max_length": "A project name can be at most 200 characters."},
    )
    title = forms.CharField(
        required=False,
        max_length=TITLE_MAX,
        error_messages={"max_length": f"A title can be at most {TITLE_MAX} characters."},
    )
    due = forms.DateField(
        required=False,
        error_messages={"invalid": "Write the due date as a date, like 2026-12-24."},
    )
    # Not on the short form, but a post may carry them (the task page's own form does).
    description = forms.CharField(required=False, strip=False)
    priority = forms.ChoiceField(
        required=False,
        choices=Priority.choices,
        error_messages={"invalid_choice": "Choose a priority: low, normal, high or urgent."},
    )

    def __init__(self, *args: Any, projects: list[Project], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.projects = projects
        field = self.fields["project"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [(p.key, f"{p.key} · {p.name}") for p in projects]
        field.error_messages["invalid_choice"] = (
            "That project is not open for new tasks any more. Choose one from the list."
        )

    @property
    def makes_project(self) -> bool:
        """True when there is no project to choose: the form makes one."""
        return not self.projects

    def clean_project(self) -> str:
        key = self.cleaned_data.get("project") or ""
        if not self.makes_project and not key:
            raise forms.ValidationError("Choose the project the task goes into.")
        return key

    def clean_project_key(self) -> str:
        if not self.makes_project:
            return ""
        return clean_project_key(self.cleaned_data.get("project_key") or "")

    def clean_project_name(self) -> str:
        if not self.makes_project:
            return ""
        return clean_project_name(self.cleaned_data.get("project_name") or "")

    def clean_priority(self) -> str:
        return self.cleaned_data.get("priority") or Priority.NORMAL

    def clean_title(self) -> str:
        title = " ".join((self.cleaned_data.get("title") or "").split())
        if not title:
            raise forms.ValidationError("Give the task a title: what is there to do?")
        return title
