"""Error pages inside the layout."""

import sys

from django.shortcuts import render

from console import busy


def forbidden(request, exception=None):
    return render(request, "403.html", status=403)


def not_found(request, exception=None):
    return render(request, "404.html", status=404)


def server_error(request):
    # Django calls this while handling the exception: a server that could not answer is a
    # 503 with "try again", not a bug (console/busy.py).
    error = sys.exc_info()[1]
    if busy.unavailable(error) or busy.is_marked(request):
        busy.mark(request)
        return busy.response(request)
    # Rendered without the request context: whatever broke may break again there.
    return render(request, "500.html", status=500, using=None)
