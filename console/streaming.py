"""Streaming responses that stream under either server.

Under ASGI, Django reads a synchronous iterator of a streaming response *whole* into memory
before sending any of it (and warns); a job's log or output file may be gigabytes, and
WhiteNoise serves every static file that way. :class:`StreamingMiddleware`, the outermost,
gives the ASGI server an asynchronous iterator instead (:func:`served`) that reads one chunk
at a time in a thread; the WSGI server (the test suite's live server) keeps the plain one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest

CHUNK = 1 << 16
_END = object()


def served(request, chunks: Iterable[bytes]) -> Iterable[bytes] | AsyncIterator[bytes]:
    if not isinstance(request, ASGIRequest):
        return chunks
    iterator = iter(chunks)

    async def each() -> AsyncIterator[bytes]:
        read = sync_to_async(next, thread_sensitive=False)
        while (part := await read(iterator, _END)) is not _END:
            yield part

    return each()


def file_chunks(file) -> Iterator[bytes]:
    return iter(lambda: file.read(CHUNK), b"")


class StreamingMiddleware:
    """Every streaming response with a synchronous body is served chunk by chunk under ASGI:
    a file's in CHUNK-sized reads, anything else as its iterator yields."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.streaming and not response.is_async and isinstance(request, ASGIRequest):
            file = getattr(response, "file_to_stream", None)
            chunks = file_chunks(file) if file is not None else response.streaming_content
            # A FileResponse still closes its file when the response is closed.
            response.streaming_content = served(request, chunks)
        return response
