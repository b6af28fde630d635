from django.urls import path

from jobs.api import api
from jobs.api.docs import api_docs
from jobs.terminal import views as terminal
from jobs.views import (
    detail,
    devenvs,
    form,
    form_availability,
    lists,
    notifications,
    operations,
    outputs,
    predict,
    queue,
    runs,
    tools,
)

urlpatterns = [
    path("api/v1/docs/", api_docs, name="api_docs"),
    path("account/notifications/", notifications.notifications, name="notifications"),
    path("api/v1/", api.urls),
    path("jobs/", lists.job_list, name="job_list"),
    path("jobs/delete/", lists.bulk_delete, name="job_bulk_delete"),
    path("jobs/new/", form.job_new, name="job_new"),
    path("jobs/new/refresh/", form.job_form_refresh, name="job_form_refresh"),
    path("jobs/new/predict/", predict.job_form_predict, name="job_form_predict"),
    path("jobs/new/export/", form.job_form_export, name="job_form_export"),
    path(
        "jobs/new/availability/",
        form_availability.job_form_availability,
        name="job_form_availability",
    ),
    path("jobs/<int:pk>/", detail.job_detail, name="job_detail"),
    path("jobs/<int:pk>/live/", runs.job_live, name="job_live"),
    path("jobs/<int:pk>/logs/", runs.job_logs, name="job_logs"),
    path("jobs/<int:pk>/logs/more/", runs.job_logs_more, name="job_logs_more"),
    path("jobs/<int:pk>/logs/download/", runs.job_log_download, name="job_log_download"),
    path(
        "jobs/<int:pk>/terminal/<slug:replica>/",
        terminal.terminal_page,
        name="job_terminal",
    ),
    path("jobs/<int:pk>/outputs/", outputs.job_outputs, name="job_outputs"),
    path("jobs/<int:pk>/usage/", runs.job_usage, name="job_usage"),
    path("jobs/<int:pk>/clone/", form.job_clone, name="job_clone"),
    path("jobs/<int:pk>/stop/", operations.job_stop, name="job_stop"),
    path("jobs/<int:pk>/delete/", operations.job_delete, name="job_delete"),
    path("jobs/<int:pk>/duration/", operations.job_duration, name="job_duration"),
    path("jobs/<int:pk>/priority/", operations.job_priority, name="job_priority"),
    path("jobs/<int:pk>/devenv/", operations.job_devenv, name="job_devenv"),
    path("jobs/<int:pk>/tensorboard/", tools.job_tensorboard, name="job_tensorboard"),
    path(
        "jobs/<int:pk>/tensorboard/status/",
        tools.job_tensorboard_status,
        name="job_tensorboard_status",
    ),
    path(
        "jobs/<int:pk>/tensorboard/stop/", tools.job_tensorboard_stop, name="job_tensorboard_stop"
    ),
    path("queue/", queue.queue, name="queue"),
    path("queue/<int:pk>/priority/", queue.queue_priority, name="queue_priority"),
    path("devenvs/", devenvs.devenv_list, name="devenv_list"),
    path("devenvs/<int:pk>/", devenvs.devenv_detail, name="devenv_detail"),
    path("devenvs/<int:pk>/delete/", devenvs.devenv_delete, name="devenv_delete"),
    path("devenvs/<int:pk>/job/", form.job_from_devenv, name="job_from_devenv"),
    path("devenvs/<int:pk>/lab/", tools.devenv_lab, name="devenv_lab"),
    path("devenvs/<int:pk>/lab/status/", tools.devenv_lab_status, name="devenv_lab_status"),
    path("devenvs/<int:pk>/lab/stop/", tools.devenv_lab_stop, name="devenv_lab_stop"),
]
