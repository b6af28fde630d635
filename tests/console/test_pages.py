import pytest

pytestmark = pytest.mark.django_db


class TestDashboard:
    def test_anonymous_goes_to_login(self, client):
        response = client.get("/")
        assert response.status_code == 302
        assert response["Location"] == "/login/?next=/"

    def test_member_sees_own_projects_with_role(self, client, alice, speech):
        client.force_login(alice)
        response = client.get("/")
        assert response.status_code == 200
        body = response.content.decode()
        assert "/projects/vision/" in body
        assert "/projects/speech/" not in body
        assert "Member" in body

    def test_admin_in_no_project_is_told_so(self, client, admin, vision):
        client.force_login(admin)
        body = client.get("/").content.decode()
        assert "you see every project, but belong to none" in body

    def test_header_has_switcher_and_language_menu(self, client, alice):
        client.force_login(alice)
        body = client.get("/").content.decode()
        assert 'data-testid="project-switcher"' in body
        assert 'data-testid="language-switcher"' in body
        assert 'hx-headers=\'{"X-CSRFToken": "' in body


class TestProjectDetail:
    def test_member_sees_members(self, client, alice, bob, lead):
        client.force_login(alice)
        response = client.get("/projects/vision/")
        assert response.status_code == 200
        body = response.content.decode()
        for name in ("alice", "bob", "lead"):
            assert name in body

    def test_outsider_gets_404_page_in_layout(self, client, charlie, vision):
        client.force_login(charlie)
        response = client.get("/projects/vision/")
        assert response.status_code == 404
        assert b"Nothing here" in response.content
        assert b"navbar" in response.content

    def test_admin_sees_any_project(self, client, admin, alice):
        client.force_login(admin)
        assert client.get("/projects/vision/").status_code == 200


class TestSwitchProject:
    def test_switch_changes_current_project(self, client, alice, speech, password):
        from tests.factories import MembershipFactory

        MembershipFactory(project=speech, user=alice)
        client.force_login(alice)
        response = client.post("/projects/switch/", {"project": speech.pk, "next": "/"})
        assert response.status_code == 302
        assert response["Location"] == "/"
        body = client.get("/").content.decode()
        assert "Working in Speech" in body
        assert "Now working in project Speech." in body

    def test_cannot_switch_into_a_foreign_project(self, client, charlie, vision):
        client.force_login(charlie)
        assert client.post("/projects/switch/", {"project": vision.pk}).status_code == 404
        assert client.post("/projects/switch/", {"project": "x"}).status_code == 404

    def test_offsite_next_is_ignored(self, client, alice, vision):
        client.force_login(alice)
        response = client.post(
            "/projects/switch/", {"project": vision.pk, "next": "https://evil.example/"}
        )
        assert response["Location"] == "/"

    @pytest.mark.parametrize("target", ["\u00b2", "job_list", "-1", "//evil.example/", "a\x00b"])
    def test_next_must_be_a_path_of_ours(self, client, alice, vision, target):
        # redirect() takes a bare word for a view's name: "²" was a NoReverseMatch (500).
        client.force_login(alice)
        response = client.post("/projects/switch/", {"project": vision.pk, "next": target})
        assert (response.status_code, response["Location"]) == (302, "/")

    @pytest.mark.parametrize("project", ["\u00b2", "+1", "9" * 30, "a\x00b"])
    def test_a_project_that_is_no_id_is_404(self, client, alice, vision, project):
        client.force_login(alice)
        assert client.post("/projects/switch/", {"project": project}).status_code == 404

    def test_get_is_not_allowed(self, client, alice):
        client.force_login(alice)
        assert client.get("/projects/switch/").status_code == 405


def test_unknown_address_gets_404_page(client, alice):
    client.force_login(alice)
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    assert b"Nothing here" in response.content


@pytest.mark.parametrize(
    ("method", "path", "status", "says"),
    [
        ("get", "/jobs/new/", 200, "New training job"),
        ("post", "/jobs/new/", 422, "You are in no project"),
        ("post", "/jobs/new/refresh/", 200, ""),
        ("post", "/jobs/new/predict/", 200, ""),
        ("post", "/jobs/new/availability/", 200, ""),
        ("get", "/queue/", 403, ""),
        ("get", "/cluster/", 200, ""),
        ("get", "/usage/", 200, "Nothing was held in this period"),
    ],
)
def test_a_user_in_no_project_gets_pages_not_500(client, method, path, status, says):
    # request.project is then a lazy object around None: false, but not None.
    from tests.factories import UserFactory

    client.force_login(UserFactory(username="newcomer"))
    response = getattr(client, method)(path, {"name": "x"} if method == "post" else {})
    assert response.status_code == status
    assert says in response.content.decode()
