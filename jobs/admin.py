from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from console.admin import ReadOnlyAdmin
from jobs.models import Job, JobEvent

# Shown, never written. A job moves only through jobs.lifecycle: each move is a conditional
# UPDATE from the phase it was read in, with its event, so a worker that moved it first wins
# and nothing is moved twice; its allocations are released and its workload stopped by
# jobs.operations. A form here would save every field over whatever a worker wrote
# meanwhile, and a delete would leave its processes running. Events are the job's timeline:
# written once, by those moves.


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    list_display = ["name", "owner", "project", "status", "phase", "priority", "created_at"]
    list_filter = ["status", "phase", "mode", "job_type", "project"]
    list_select_related = ["owner", "project"]
    search_fields = ["name", "owner__username", "project__name"]
    readonly_fields = ["events"]

    @admin.display(description=_("Events"))
    def events(self, job: Job) -> str:
        address = reverse("admin:jobs_jobevent_changelist")
        return format_html('<a href="{}?job__exact={}">{}</a>', address, job.pk, _("Events"))


@admin.register(JobEvent)
class JobEventAdmin(ReadOnlyAdmin):
    list_display = ["at", "job", "kind", "phase", "item", "message"]
    list_filter = ["kind", "item"]
    list_select_related = ["job"]
    search_fields = ["job__name", "message", "item"]
