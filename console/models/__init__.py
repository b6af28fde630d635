from console.models.heartbeat import Heartbeat
from console.models.platform import PlatformSetting, SettingChange
from console.models.projects import Membership, Project, Role

__all__ = ["Heartbeat", "Membership", "PlatformSetting", "Project", "Role", "SettingChange"]
