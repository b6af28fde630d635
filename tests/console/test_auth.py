import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


class TestLogin:
    def test_page_renders(self, client):
        response = client.get("/login/")
        assert response.status_code == 200
        assert b'name="username"' in response.content

    def test_right_password_goes_to_dashboard(self, client, alice, password):
        response = client.post("/login/", {"username": "alice", "password": password})
        assert response.status_code == 302
        assert response["Location"] == reverse("dashboard")
        assert client.get("/").status_code == 200

    def test_next_is_honoured(self, client, alice, password):
        response = client.post(
            "/login/", {"username": "alice", "password": password, "next": "/settings/"}
        )
        assert response["Location"] == "/settings/"

    def test_wrong_password_keeps_username_and_says_so(self, client, alice):
        response = client.post("/login/", {"username": "alice", "password": "nope"})
        assert response.status_code == 200
        assert b"Please enter a correct username and password" in response.content
        assert b'value="alice"' in response.content
        assert client.get("/").status_code == 302

    def test_lockout_after_five_failures_per_username_and_address(
        self, client, alice, bob, password
    ):
        for _ in range(5):
            client.post("/login/", {"username": "alice", "password": "nope"})
        locked = client.post("/login/", {"username": "alice", "password": password})
        assert locked.status_code == 429
        assert b"Too many failed logins" in locked.content
        # Another username from the same address is not locked out.
        other = client.post("/login/", {"username": "bob", "password": password})
        assert other.status_code == 302

    def test_lockout_is_per_address(self, client, alice, password):
        for _ in range(5):
            client.post(
                "/login/", {"username": "alice", "password": "nope"}, REMOTE_ADDR="10.1.1.1"
            )
        response = client.post(
            "/login/", {"username": "alice", "password": password}, REMOTE_ADDR="10.2.2.2"
        )
        assert response.status_code == 302

    def test_logged_in_user_skips_login_page(self, client, alice):
        client.force_login(alice)
        assert client.get("/login/").status_code == 302


def test_logout_needs_post_and_ends_session(client, alice):
    client.force_login(alice)
    response = client.post("/logout/")
    assert response.status_code == 302
    assert response["Location"] == "/login/"
    assert client.get("/").status_code == 302
