"""Reading the request of a connection the ASGI entry point serves outside Django's views."""

from __future__ import annotations

from console.asgi_auth import cookies_of, headers_of, same_origin


def scope(*headers: tuple[str, str], kind: str = "http") -> dict:
    return {
        "type": kind,
        "headers": [(n.encode("latin-1"), v.encode("latin-1")) for n, v in headers],
    }


def test_repeated_headers_are_joined_and_names_lower_case():
    found = headers_of(
        scope(("Accept", "text/html"), ("accept", "application/json"), ("Host", "a"))
    )
    assert found == {"accept": "text/html, application/json", "host": "a"}


def test_cookies_split_over_several_headers_all_count():
    # HTTP/2 clients may send each cookie in a header of its own.
    request = scope(("cookie", "sessionid=abc"), ("cookie", "console-tool-3=t; lang=zh-hans"))
    assert headers_of(request)["cookie"] == "sessionid=abc; console-tool-3=t; lang=zh-hans"
    assert cookies_of(request) == {"sessionid": "abc", "console-tool-3": "t", "lang": "zh-hans"}


def test_a_malformed_cookie_header_is_no_cookie():
    assert cookies_of(scope(("cookie", 'sessionid="abc'))) == {}


def test_a_websocket_must_come_from_this_site():
    here = ("host", "console.example:8000")
    assert same_origin(scope(here, ("origin", "http://console.example:8000"), kind="websocket"))
    assert not same_origin(scope(here, ("origin", "http://evil.example"), kind="websocket"))
    assert not same_origin(scope(here, kind="websocket"))  # a browser always sends Origin
    assert same_origin(scope(here))  # plain HTTP without Origin: a same-site navigation
