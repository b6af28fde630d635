from django.contrib import admin

from console.login import AdminLoginForm
from console.models import Membership, PlatformSetting, Project, SettingChange

# The admin's login checks the username's length like the console's (see console/login.py).
admin.site.login_form = AdminLoginForm


class ReadOnlyAdmin(admin.ModelAdmin):
    """Shown in the admin, never written there: for what the console's own pages or its
    workers change (each app's admin.py says why for its models)."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["project", "user", "role", "joined_at"]
    list_filter = ["role", "project"]
    search_fields = ["user__username", "project__name"]


@admin.register(PlatformSetting)
class PlatformSettingAdmin(admin.ModelAdmin):
    list_display = ["name", "value", "updated_at"]

    def has_change_permission(self, request, obj=None):
        # Limits change through /settings/, which validates and audits them.
        return False

    def has_add_permission(self, request):
        return False


@admin.register(SettingChange)
class SettingChangeAdmin(admin.ModelAdmin):
    list_display = ["name", "old_value", "new_value", "changed_by", "changed_at"]
    list_filter = ["name"]

    def has_change_permission(self, request, obj=None):
        return False

    def has_add_permission(self, request):
        return False
