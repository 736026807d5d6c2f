"""Chunked request bodies for Django's WSGI handler.

Django reads exactly CONTENT_LENGTH bytes of a body, so a `Transfer-Encoding: chunked` request (no
Content-Length) reached the views as an empty body ("body: Field required"). The server (gunicorn)
de-chunks it and says the stream ends by itself (`wsgi.input_terminated`); this reads it, bounded by the
largest body the project accepts, and hands Django a stream of known length. A body over the bound gets
the length limit+1, so the usual limits answer 413 as for any oversize body.
"""
from __future__ import annotations

import io

from django.conf import settings


def body_bound() -> int:
    return max(settings.API_MAX_BODY_BYTES, settings.SOURCE_UPLOAD_MAX_BYTES, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)


def read_chunked_body(environ: dict) -> None:
    chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
    if not chunked or environ.get("CONTENT_LENGTH") or not environ.get("wsgi.input_terminated"):
        return
    body = environ["wsgi.input"].read(body_bound() + 1)
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
