from django.urls import path

from archive import views

app_name = "archive"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("chats/", views.chat_list, name="chats"),
    path("chats/<int:chat_id>/", views.chat_detail, name="chat"),
    path("search/", views.search, name="search"),
    path("search/save/", views.search_save_view, name="search_save"),
    path("search/saved/<int:saved_id>/delete/", views.search_delete_view, name="search_delete"),
    path("people/", views.people, name="people"),
    path("people/new/", views.person_create_view, name="person_create"),
    path("people/suggestions/", views.people_suggestions, name="people_suggestions"),
    path("people/<int:person_id>/", views.person_detail, name="person"),
    path("people/<int:person_id>/edit/", views.person_edit_view, name="person_edit"),
    path("agents/", views.agents, name="agents"),
    path("sends/", views.sends_page, name="sends"),
    path("webhooks/", views.webhooks, name="webhooks"),
    path("webhooks/private/", views.webhooks_private_view, name="webhooks_private"),
    path("webhooks/<int:endpoint_id>/", views.webhook_detail, name="webhook"),
    path("sends/lock/", views.gateway_lock_view, name="gateway_lock"),
    path("sends/<str:send_id>/", views.send_decide_view, name="send_decide"),
    path("agents/<str:public_id>/", views.agent_edit_view, name="agent_edit"),
    path("tags/", views.tags_page, name="tags"),
    path("tags/add/", views.tag_add_view, name="tag_add"),
    path("tags/remove/", views.tag_remove_view, name="tag_remove"),
    path("tags/names/", views.tag_names_view, name="tag_names"),
    path("tags/<int:tag_id>/edit/", views.tag_edit_view, name="tag_edit"),
    path("tags/all/", views.tag_all_view, name="tag_all"),
    path("tags/all/<int:bulk_id>/", views.tag_bulk_view, name="tag_bulk"),
    path("tags/all/<int:bulk_id>/undo/", views.tag_bulk_undo_view, name="tag_bulk_undo"),
    path("m/<str:public_id>/", views.message_permalink, name="message"),
    path("m/<str:public_id>/revisions/", views.message_revisions, name="revisions"),
    path("attachments/<str:public_id>/", views.attachment_download_view, name="attachment"),
    path(
        "attachments/<str:public_id>/thumbnail/",
        views.attachment_thumbnail_view,
        name="attachment_thumbnail",
    ),
    path("imports/", views.imports, name="imports"),
    path("imports/<str:public_id>/", views.import_detail, name="import"),
    path("imports/<str:public_id>/cancel/", views.import_cancel, name="import_cancel"),
    path("imports/<str:public_id>/resume/", views.import_resume, name="import_resume"),
]
