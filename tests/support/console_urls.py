"""Every URL pattern of the console, and the ids each one takes, for tests that walk them all."""
from __future__ import annotations

from django.urls import URLPattern

from conflicts import urls as console_urls

# Views outside any knowledge base (signing in and out, choosing one): no object ids, no KB role.
NOT_KB_VIEWS = {"login", "logout", "kb_switch"}
# Which object a pattern's `pk` names, by the start of the pattern's name.
PK_OWNERS = {"conflict": "conflict", "article": "article", "ops_sync_job": "sync_job", "ops_token": "token",
             "rule": "rule"}


def console_patterns():
    """(name, converters) of every console URL pattern."""
    for pattern in console_urls.urlpatterns:
        assert isinstance(pattern, URLPattern), "nested URL confs need walking too"
        yield pattern.name, pattern.pattern.converters


def console_kwargs(name: str, converters, objects: dict) -> dict:
    """URL kwargs for pattern `name` from `objects` (conflict, article, version, sync_job, token, rule).
    A new pattern with ids fails here until PK_OWNERS says which object they name: that is the point."""
    if not converters:
        return {}
    key = next((value for prefix, value in PK_OWNERS.items() if name.startswith(prefix)), None)
    assert key is not None, f"URL pattern {name!r} takes ids; say in PK_OWNERS which object they name"
    kwargs = {"pk": objects[key].pk}
    if "version_pk" in converters:
        kwargs["version_pk"] = objects["version"].pk
    assert set(kwargs) == set(converters), (name, converters)
    return kwargs
