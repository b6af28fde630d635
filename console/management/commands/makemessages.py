"""``makemessages`` that also extracts the plural messages stored through
``console.words.counted`` (Django's own command knows only its gettext functions)."""

from django.core.management.commands import makemessages


class Command(makemessages.Command):
    xgettext_options = [*makemessages.Command.xgettext_options, "--keyword=counted:1,2"]
