"""The notes pages, under the owner's sign-in like every page (wirecat/auth.py)."""

from django.urls import path

from notes import views

app_name = "notes"

urlpatterns = [
    path("", views.note_list, name="list"),
    path("new/", views.note_new, name="new"),
    path("<str:public_id>/", views.note_detail, name="note"),
    path("<str:public_id>/edit/", views.note_edit, name="edit"),
]
