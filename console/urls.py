from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from console.login import LoginForm
from console.views import limits, pages, tokens

urlpatterns = [
    path("", pages.dashboard, name="dashboard"),
    path(
        "login/",
        auth_views.LoginView.as_view(
            authentication_form=LoginForm, redirect_authenticated_user=True
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("projects/switch/", pages.switch_project, name="switch_project"),
    path("projects/<slug:slug>/", pages.project_detail, name="project_detail"),
    path("settings/", limits.settings_page, name="settings"),
    path("account/tokens/", tokens.token_list, name="api_tokens"),
    path("account/tokens/<int:pk>/revoke/", tokens.token_revoke, name="api_token_revoke"),
    path("", include("resources.urls")),
    path("", include("jobs.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
]

handler403 = "console.views.errors.forbidden"
handler404 = "console.views.errors.not_found"
handler500 = "console.views.errors.server_error"
