import pytest

pytestmark = pytest.mark.django_db


def test_login_page_in_chinese(client):
    response = client.get("/login/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9")
    body = response.content.decode()
    assert 'lang="zh-hans"' in body
    assert "登录" in body


def test_language_switch_sticks(client, alice):
    client.force_login(alice)
    response = client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    assert response.status_code == 302
    body = client.get("/").content.decode()
    assert "我的项目" in body
    client.post("/i18n/setlang/", {"language": "en", "next": "/"})
    assert "Your projects" in client.get("/").content.decode()


def test_error_pages_are_translated(client, charlie, vision):
    client.force_login(charlie)
    client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    assert "这里什么也没有" in client.get("/projects/vision/").content.decode()
    assert "您无权执行此操作" in client.get("/settings/").content.decode()


def test_settings_page_in_chinese(client, admin):
    client.force_login(admin)
    client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    body = client.get("/settings/").content.decode()
    assert "平台设置" in body
    assert "最大续训次数上限" in body
