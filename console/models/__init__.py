from console.models.heartbeat import Heartbeat
from console.models.platform import PlatformSetting, SettingChange
from console.models.projects import Department, Membership, Project, Role

__all__ = [
    "Department",
    "Heartbeat",
    "Membership",
    "PlatformSetting",
    "Project",
    "Role",
    "SettingChange",
]
