import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
application = get_wsgi_application()

from console import heap  # noqa: E402 - after Django is set up

heap.freeze_start_up()
