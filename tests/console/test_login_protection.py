"""Login behind a reverse proxy: lockout per client and per username, over-long usernames,
and the demo password outside demo mode. Real requests through the test client."""

import pytest
from axes.models import AccessAttempt

pytestmark = pytest.mark.django_db

PROXY = "127.0.0.1"  # the reverse proxy, as the console sees it


def login(client, username, password, via=None, **extra):
    if via is not None:
        extra["HTTP_X_FORWARDED_FOR"] = via
    return client.post(
        "/login/", {"username": username, "password": password}, REMOTE_ADDR=PROXY, **extra
    )


@pytest.fixture
def behind_proxy(settings):
    settings.CLIENT_IP_HEADER = "HTTP_X_FORWARDED_FOR"
    settings.TRUSTED_PROXY_COUNT = 1
    return settings


class TestClientAddressBehindAProxy:
    def test_lockout_follows_the_forwarded_address(self, client, alice, password, behind_proxy):
        for n in range(5):
            # Whatever the client puts in front of the header, the proxy appends its address.
            login(client, "alice", "nope", via=f"203.0.113.{n}, 10.0.0.1")
        assert login(client, "alice", password, via="10.0.0.1").status_code == 429
        # Another client through the same proxy is not locked out.
        assert login(client, "alice", password, via="10.0.0.2").status_code == 302
        assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"10.0.0.1"}

    def test_without_the_setting_the_header_is_not_trusted(self, client, alice, password):
        for n in range(5):
            login(client, "alice", "nope", via=f"10.0.0.{n}")
        # Every attempt came from the proxy's own address: that pair is locked.
        assert login(client, "alice", password, via="10.0.0.99").status_code == 429
        assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {PROXY}

    def test_two_proxies(self, client, alice, password, behind_proxy):
        behind_proxy.TRUSTED_PROXY_COUNT = 2
        for _ in range(5):
            login(client, "alice", "nope", via="198.51.100.7, 10.0.0.1, 10.0.0.5")
        assert AccessAttempt.objects.get().ip_address == "10.0.0.1"
        assert login(client, "alice", password, via="10.0.0.1, 10.0.0.5").status_code == 429

    @pytest.mark.parametrize(
        ("header", "seen"),
        [
            ("not an address", PROXY),
            ("", PROXY),
            ("10.0.0.7:52100", "10.0.0.7"),
            ("[2001:db8::7]:443", "2001:db8::7"),
            ("2001:db8::8", "2001:db8::8"),
        ],
    )
    def test_odd_header_values(self, client, alice, behind_proxy, header, seen):
        assert login(client, "alice", "nope", via=header).status_code == 200
        assert AccessAttempt.objects.get().ip_address == seen


class TestPerUsername:
    def test_many_addresses_guessing_one_username_lock_it(
        self, client, alice, bob, password, behind_proxy
    ):
        behind_proxy.LOGIN_USERNAME_FAILURE_LIMIT = 8
        for n in range(8):
            # Two tries from each address: never the five of the per-address limit.
            login(client, "alice", "nope", via=f"10.1.0.{n // 2}")
        locked = login(client, "alice", password, via="10.9.9.9")
        assert locked.status_code == 429
        assert b"This username cannot log in for now" in locked.content
        # Other usernames are not affected.
        assert login(client, "bob", password, via="10.9.9.9").status_code == 302

    def test_below_the_limit_the_right_password_works(self, client, alice, password, behind_proxy):
        behind_proxy.LOGIN_USERNAME_FAILURE_LIMIT = 8
        for n in range(7):
            login(client, "alice", "nope", via=f"10.1.0.{n}")
        assert login(client, "alice", password, via="10.9.9.9").status_code == 302

    def test_lockout_page_says_how_long(self, client, alice, settings):
        from datetime import timedelta

        settings.AXES_COOLOFF_TIME = timedelta(minutes=42)
        for _ in range(5):
            login(client, "alice", "nope")
        assert b"Wait 42 minutes" in login(client, "alice", "nope").content


class TestUsernameField:
    @pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
    def test_an_over_long_username_is_a_field_error(self, client, path):
        typed = "a" * 307
        response = client.post(path, {"username": typed, "password": "x"})
        assert response.status_code == 200
        assert b"A username has at most 150 characters (this one has 307)." in response.content
        assert AccessAttempt.objects.count() == 0
        if path == "/login/":
            assert f'value="{typed}"'.encode() in response.content

    def test_a_nul_is_a_field_error(self, client):
        response = client.post("/login/", {"username": "ali\0ce", "password": "x"})
        assert response.status_code == 200
        assert b"Null characters are not allowed." in response.content

    def test_axes_never_records_more_than_its_column(self, rf):
        from console.login import attempted_username

        assert attempted_username(rf.post("/", {"username": "b\0" + "x" * 400})) == "b" + "x" * 149
        assert attempted_username(rf.post("/"), {"username": "bob"}) == "bob"
        assert attempted_username(rf.post("/")) is None


class TestDemoPassword:
    @pytest.fixture
    def demo_alice(self, alice):
        alice.set_password("demo")
        alice.save()
        return alice

    def test_refused_and_disabled_outside_demo_mode(self, client, demo_alice, settings):
        settings.DEMO_MODE = False
        response = login(client, "alice", "demo")
        assert response.status_code == 200
        assert b"Please enter a correct username and password" in response.content
        demo_alice.refresh_from_db()
        assert not demo_alice.has_usable_password()
        # Turning demo mode back on does not bring the refused login back by itself.
        settings.DEMO_MODE = True
        assert login(client, "alice", "demo").status_code == 200

    def test_accepted_in_demo_mode(self, client, demo_alice, settings):
        settings.DEMO_MODE = True
        assert login(client, "alice", "demo").status_code == 302

    def test_other_passwords_are_unaffected(self, client, alice, password, settings):
        settings.DEMO_MODE = False
        assert login(client, "alice", password).status_code == 302
