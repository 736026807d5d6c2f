import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbreview.settings")
django_application = get_wsgi_application()

# Load the embedding model as the web process starts (search and a reviewer's fix need it), so the
# first request that embeds does not wait seconds for it.
from articles.embeddings import get_encoder  # noqa: E402
from kbreview.chunked import read_chunked_body  # noqa: E402

get_encoder()


def application(environ, start_response):
    read_chunked_body(environ)
    return django_application(environ, start_response)
