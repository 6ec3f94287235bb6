"""The meetings pages, under the owner's sign-in like every page (wirecat/auth.py)."""

from django.urls import path

from meetings import views

app_name = "meetings"

urlpatterns = [
    path("", views.calendar, name="calendar"),
    path("<str:public_id>/", views.meeting_detail, name="meeting"),
    path("<str:public_id>/recording/", views.meeting_recording, name="recording"),
]
