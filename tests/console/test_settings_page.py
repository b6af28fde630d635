import pytest

from console import limits
from console.models import PlatformSetting, SettingChange
from tests.helpers import settings_form_data as form_data

pytestmark = pytest.mark.django_db


class TestAccess:
    def test_anonymous_goes_to_login(self, client):
        response = client.get("/settings/")
        assert response.status_code == 302
        assert response["Location"].startswith("/login/")

    @pytest.mark.parametrize("actor", ["alice", "lead", "charlie"])
    def test_non_admins_get_403_page(self, client, request, actor):
        client.force_login(request.getfixturevalue(actor))
        response = client.get("/settings/")
        assert response.status_code == 403
        assert b"You may not do this" in response.content
        assert client.post("/settings/", form_data(max_resumes=9)).status_code == 403
        assert not PlatformSetting.objects.exists()

    def test_admin_sees_every_limit_with_defaults(self, client, admin):
        client.force_login(admin)
        response = client.get("/settings/")
        assert response.status_code == 200
        body = response.content.decode()
        for limit in limits.LIMITS:
            assert f'name="{limit.name}"' in body
        assert 'value="1, 2, 4, 8, 24, 72, 168"' in body
        assert "No changes yet" in body


class TestSave:
    def test_changes_are_saved_audited_and_read_back(self, client, admin):
        client.force_login(admin)
        response = client.post(
            "/settings/",
            form_data(max_resumes=5, durations_hours="24, 2,2", sharing_enabled=False),
        )
        assert response.status_code == 302
        current = limits.current()
        assert current.max_resumes == 5
        assert current.durations_hours == [2, 24]
        assert current.sharing_enabled is False
        changes = {c.name: c for c in SettingChange.objects.all()}
        assert set(changes) == {"max_resumes", "durations_hours", "sharing_enabled"}
        assert (changes["max_resumes"].old_value, changes["max_resumes"].new_value) == (3, 5)
        assert changes["max_resumes"].changed_by == admin
        page = client.get("/settings/").content.decode()
        assert "Saved 3 changes" in page
        assert "Max checkpoint resumes" in page

    def test_unchanged_post_records_nothing(self, client, admin):
        client.force_login(admin)
        client.post("/settings/", form_data())
        assert not SettingChange.objects.exists()
        assert "Nothing changed." in client.get("/settings/").content.decode()

    @pytest.mark.parametrize(
        ("field", "typed", "message"),
        [
            ("max_resumes", "-1", "greater than or equal to 0"),
            ("max_resumes", "lots", "Enter a whole number"),
            ("ps_memory_gib", "0", "greater than or equal to 1"),
            ("durations_hours", "1, two", "“two” is not a whole number"),
            ("durations_hours", "1, 99999", "Each number must be from 1 to 8760; 99999 is not"),
            ("durations_hours", " , ", "Enter at least one number"),
            ("performance_policies", ["nonsense"], "Select a valid choice"),
        ],
    )
    def test_invalid_values_get_field_errors_and_keep_input(
        self, client, admin, field, typed, message
    ):
        client.force_login(admin)
        response = client.post("/settings/", form_data(**{field: typed, "max_fault_restarts": 7}))
        assert response.status_code == 422
        body = response.content.decode()
        assert message in body
        assert "is-invalid" in body or "d-block" in body
        # What the admin typed elsewhere is still in the form...
        assert 'name="max_fault_restarts"' in body and 'value="7"' in body
        # ...and nothing at all was saved.
        assert not PlatformSetting.objects.exists()
        assert limits.current().max_fault_restarts == 3
