from console.models.heartbeat import Heartbeat
from console.models.platform import PlatformSetting, SettingChange
from console.models.projects import Department, Membership, Project, Role
from console.models.tokens import ApiToken

__all__ = [
    "ApiToken",
    "Department",
    "Heartbeat",
    "Membership",
    "PlatformSetting",
    "Project",
    "Role",
    "SettingChange",
]
