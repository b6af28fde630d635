import re

import pytest
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.test import RequestFactory
from django.urls import path

from console.htmx import render_page

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


class TestRenderPage:
    def test_full_page_without_htmx(self, client, alice):
        client.force_login(alice)
        response = client.get("/")
        assert b"<html" in response.content
        assert "HX-Request" in response["Vary"]

    def test_fragment_for_htmx(self, client, alice):
        client.force_login(alice)
        response = client.get("/", **HTMX)
        assert b"<html" not in response.content
        assert b"Your projects" in response.content
        assert "HX-Request" in response["Vary"]

    def test_boosted_request_gets_the_whole_page(self, client, alice):
        client.force_login(alice)
        response = client.get("/", HTTP_HX_REQUEST="true", HTTP_HX_BOOSTED="true")
        assert b"<html" in response.content

    def test_status_is_passed_through(self, rf: RequestFactory, alice):
        request = rf.get("/")
        request.user = alice
        request.project = None
        response = render_page(request, "console/dashboard.html", {}, status=422)
        assert response.status_code == 422


def _flash_and_redirect(request):
    messages.success(request, "Done and dusted.")
    return redirect("/elsewhere/")


def _flash_and_render(request):
    messages.info(request, "Heads up.")
    return HttpResponse("<p>fragment</p>")


def _flash_then_nothing(request):
    messages.info(request, "Heads up.")
    return HttpResponse(status=204)


def _then_a_page(request):
    return HttpResponse("<p>page</p>")


urlpatterns = [
    path("flash-nothing/", _flash_then_nothing),
    path("page/", _then_a_page),
    path("flash-redirect/", _flash_and_redirect),
    path("flash-render/", _flash_and_render),
]


@pytest.mark.urls("tests.console.test_htmx_and_csp")
class TestMiddleware:
    def test_htmx_redirect_becomes_hx_location(self, client):
        response = client.post("/flash-redirect/", **HTMX)
        assert response.status_code == 204
        assert response["HX-Location"] == "/elsewhere/"

    def test_plain_redirect_is_left_alone(self, client):
        response = client.post("/flash-redirect/")
        assert response.status_code == 302

    def test_messages_are_swapped_out_of_band(self, client):
        response = client.get("/flash-render/", **HTMX)
        body = response.content.decode()
        assert body.startswith("<p>fragment</p>")
        assert 'id="messages"' in body and 'hx-swap-oob="true"' in body
        assert "Heads up." in body

    def test_an_answer_without_a_body_gets_none_and_the_messages_wait(self, client):
        """A 204 (or 304) has no body by HTTP's rules: bytes written after it would be read
        as the next answer on the connection. The messages go with the next page."""
        response = client.get("/flash-nothing/", **HTMX)
        assert response.status_code == 204
        assert response.content == b""
        body = client.get("/page/", **HTMX).content.decode()
        assert "Heads up." in body


class TestSecurityHeaders:
    def test_csp_forbids_inline_and_eval_scripts(self, client):
        response = client.get("/login/")
        policy = response["Content-Security-Policy"]
        script_src = re.search(r"script-src ([^;]+)", policy).group(1)
        assert "'self'" in script_src
        assert "'nonce-" in script_src
        assert "unsafe-inline" not in policy
        assert "unsafe-eval" not in policy
        assert "frame-ancestors 'none'" in policy

    def test_every_script_tag_is_external(self, client, alice):
        client.force_login(alice)
        body = client.get("/").content.decode()
        tags = re.findall(r"<script[^>]*>", body)
        assert tags, "the layout loads htmx, Bootstrap and the console's script"
        assert all("src=" in tag for tag in tags)
        assert any("htmx" in tag for tag in tags)

    def test_htmx_eval_is_off(self, client):
        body = client.get("/login/").content.decode()
        assert '"allowEval": false' in body
