"""Demo accounts and projects (the first part of ``manage.py seed_demo``)."""

from __future__ import annotations

# No model imports at module level: `make run`'s supervisor reads the names below
# before Django is set up.

DEMO_PASSWORD = "demo"

PROJECTS = [
    ("vision", "Vision", "Image models: detection, segmentation and their training data."),
    ("speech", "Speech", "Speech recognition and synthesis models."),
]

# username, first name, platform admin, {project slug: role}
USERS = [
    ("admin", "Ada", True, {}),
    ("lead", "Lee", False, {"vision": "lead"}),
    ("alice", "Alice", False, {"vision": "member"}),
    ("bob", "Bob", False, {"vision": "member"}),
    ("charlie", "Charlie", False, {"speech": "member"}),
]


def seed(log, **_seeded) -> dict:
    """Create what is missing; leave what exists (and any changed password) alone.

    With demo mode off, a demo account that still has the demo password loses it (an
    unusable password): turning demo mode off disables the known logins at the next start.
    Login refuses that password outside demo mode too (console.login.PasswordBackend).
    """
    from functools import cache

    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password

    from console.models import Membership, Project

    User = get_user_model()
    # One hash for the five accounts of a public password: each takes most of a second to
    # make, and `make run` waited for all five on a fresh machine.
    demo_hash = cache(lambda: make_password(DEMO_PASSWORD))
    projects = {}
    for slug, name, description in PROJECTS:
        projects[slug], _ = Project.objects.get_or_create(
            slug=slug, defaults={"name": name, "description": description}
        )
    users = {}
    disabled = []
    for username, first_name, admin, roles in USERS:
        user, created = User.objects.get_or_create(
            username=username,
            defaults={
                "first_name": first_name,
                "email": f"{username}@example.com",
                "is_staff": admin,
                "is_superuser": admin,
            },
        )
        if created or (settings.DEMO_MODE and not user.has_usable_password()):
            if settings.DEMO_MODE:
                user.password = demo_hash()
            else:
                user.set_unusable_password()
            user.save()
        elif not settings.DEMO_MODE and user.check_password(DEMO_PASSWORD):
            user.set_unusable_password()
            user.save(update_fields=["password"])
            disabled.append(username)
        for slug, role in roles.items():
            Membership.objects.get_or_create(
                project=projects[slug], user=user, defaults={"role": role}
            )
        users[username] = user
    if settings.DEMO_MODE:
        log(f"Demo accounts: {', '.join(name for name, *_ in USERS)} (password {DEMO_PASSWORD!r})")
    else:
        if disabled:
            log(f"DEMO_MODE is off: disabled the demo password of {', '.join(disabled)}")
        log(
            "Demo accounts exist without passwords (DEMO_MODE is off): set them with changepassword"
        )
    return {"projects": projects, "users": users}
