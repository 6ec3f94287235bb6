from django.urls import path

from tasks import views

app_name = "tasks"

urlpatterns = [
    path("", views.task_list, name="list"),
    path("board/", views.board, name="board"),
    path("new/", views.task_new, name="new"),
    path("projects/new/", views.project_new, name="project_new"),
    path("<str:key>/", views.task_detail, name="task"),
]
