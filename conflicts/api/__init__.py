"""The JSON API for chatbots (django-ninja; OpenAPI at /api/v1/openapi.json).

A token acts for one knowledge base; every ref and id resolves inside it. Every value the database
cannot hold is refused here with a 422 naming the client's field (kbreview.input_limits).

  auth.py        tokens, scopes and the per-token rate limit
  schemas.py     what each operation takes and gives (field types and their limits)
  errors.py      how refusals are answered (field names as the client wrote them, statuses)
  operations.py  the operations, on `api` (mounted at /api/v1/ by kbreview/urls.py)
"""
from conflicts.api.operations import api

__all__ = ["api"]
