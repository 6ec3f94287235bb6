from django.urls import path

from archive.conversations import views as conversations_views
from archive.files import views as files_views
from archive.gateway import views as gateway_views
from archive.imports import views as imports_views
from archive.owner import views as owner_views
from archive.people import views as people_views
from archive.search import views as search_views
from archive.stats import views as stats_views
from archive.store import views as store_views
from archive.sync import views as sync_views
from archive.tags import views as tags_views

app_name = "archive"

urlpatterns = [
    path("", owner_views.dashboard, name="dashboard"),
    path("chats/", store_views.chat_list, name="chats"),
    path("chats/<int:chat_id>/", store_views.chat_detail, name="chat"),
    path("chats/<int:chat_id>/export/", store_views.chat_export_view, name="chat_export"),
    path(
        "chats/<int:chat_id>/conversations/",
        conversations_views.chat_conversations_view,
        name="chat_conversations",
    ),
    path(
        "conversations/<str:public_id>/",
        conversations_views.conversation_view,
        name="conversation",
    ),
    path("search/", search_views.search, name="search"),
    path("search/save/", search_views.search_save_view, name="search_save"),
    path(
        "search/saved/<int:saved_id>/delete/", search_views.search_delete_view, name="search_delete"
    ),
    path("stats/", stats_views.stats_page, name="stats"),
    path("people/", people_views.people, name="people"),
    path("people/new/", people_views.person_create_view, name="person_create"),
    path("people/bulk/", people_views.people_bulk_view, name="people_bulk"),
    path("people/suggestions/", people_views.people_suggestions, name="people_suggestions"),
    path("people/<int:person_id>/", people_views.person_detail, name="person"),
    path("people/<int:person_id>/edit/", people_views.person_edit_view, name="person_edit"),
    path("agents/", gateway_views.agents, name="agents"),
    path("sync/", sync_views.sync_page, name="sync"),
    path("sync/connect/", sync_views.sync_connect_view, name="sync_connect"),
    path("sync/telegram/", sync_views.telegram_login_view, name="sync_telegram_login"),
    path("sync/<str:public_id>/", sync_views.sync_account_view, name="sync_account"),
    path("sends/", gateway_views.sends_page, name="sends"),
    path("webhooks/", gateway_views.webhooks, name="webhooks"),
    path("webhooks/private/", gateway_views.webhooks_private_view, name="webhooks_private"),
    path("webhooks/<int:endpoint_id>/", gateway_views.webhook_detail, name="webhook"),
    path("sends/lock/", gateway_views.gateway_lock_view, name="gateway_lock"),
    path("sends/<str:send_id>/", gateway_views.send_decide_view, name="send_decide"),
    path("agents/<str:public_id>/", gateway_views.agent_edit_view, name="agent_edit"),
    path("tags/", tags_views.tags_page, name="tags"),
    path("tags/add/", tags_views.tag_add_view, name="tag_add"),
    path("tags/remove/", tags_views.tag_remove_view, name="tag_remove"),
    path("tags/names/", tags_views.tag_names_view, name="tag_names"),
    path("tags/<int:tag_id>/edit/", tags_views.tag_edit_view, name="tag_edit"),
    path("tags/all/", tags_views.tag_all_view, name="tag_all"),
    path("tags/all/<int:bulk_id>/", tags_views.tag_bulk_view, name="tag_bulk"),
    path("tags/all/<int:bulk_id>/undo/", tags_views.tag_bulk_undo_view, name="tag_bulk_undo"),
    path("m/<str:public_id>/", store_views.message_permalink, name="message"),
    path("m/<str:public_id>/revisions/", store_views.message_revisions, name="revisions"),
    path(
        "m/<str:public_id>/conversation/",
        conversations_views.message_conversation_view,
        name="message_conversation",
    ),
    path("attachments/<str:public_id>/", store_views.attachment_download_view, name="attachment"),
    path(
        "attachments/<str:public_id>/text/",
        files_views.attachment_text_view,
        name="attachment_text",
    ),
    path("files/needs-text/", files_views.needs_text_view, name="files_needs_text"),
    path("files/<str:public_id>/ocr/", files_views.attachment_ocr_view, name="files_ocr"),
    path(
        "attachments/<str:public_id>/thumbnail/",
        store_views.attachment_thumbnail_view,
        name="attachment_thumbnail",
    ),
    path("imports/", imports_views.imports, name="imports"),
    path("imports/<str:public_id>/", imports_views.import_detail, name="import"),
    path("imports/<str:public_id>/cancel/", imports_views.import_cancel, name="import_cancel"),
    path("imports/<str:public_id>/resume/", imports_views.import_resume, name="import_resume"),
]
