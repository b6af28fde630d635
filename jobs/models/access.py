"""django-guardian's object permissions for jobs, with direct foreign keys.

Direct tables keep "jobs this user may see" a plain indexed join instead of a generic one.
"""

from django.db import models
from guardian.models import GroupObjectPermissionBase, UserObjectPermissionBase


class JobUserObjectPermission(UserObjectPermissionBase):
    content_object = models.ForeignKey("jobs.Job", on_delete=models.CASCADE)


class JobGroupObjectPermission(GroupObjectPermissionBase):
    content_object = models.ForeignKey("jobs.Job", on_delete=models.CASCADE)

    class Meta(GroupObjectPermissionBase.Meta):
        indexes = [
            models.Index(fields=["group", "permission", "content_object"], name="job_group_perm")
        ]
