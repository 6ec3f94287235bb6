"""The notes pages, under the owner's sign-in like every page (wirecat/auth.py)."""

from django.urls import path

from notes import views

app_name = "notes"

urlpatterns = [
    path("", views.note_list, name="list"),
    path("new/", views.note_new, name="new"),
    # before <public_id>/: these are not notes
    path("preview/", views.note_preview, name="preview"),
    path("suggest/", views.note_suggest, name="suggest"),
    path("<str:public_id>/", views.note_detail, name="note"),
    path("<str:public_id>/edit/", views.note_edit, name="edit"),
    path("<str:public_id>/revisions/", views.note_revisions, name="revisions"),
    path("<str:public_id>/delete/", views.note_delete_view, name="delete"),
]
