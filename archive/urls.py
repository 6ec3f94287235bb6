from django.urls import path

from archive import views

app_name = "archive"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("chats/", views.chat_list, name="chats"),
    path("chats/<int:chat_id>/", views.chat_detail, name="chat"),
    path("m/<str:public_id>/", views.message_permalink, name="message"),
]
