import os

from django.core.wsgi import get_wsgi_application

from console import heap

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
application = get_wsgi_application()
heap.freeze_start_up()
