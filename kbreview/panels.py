"""Panels: what an app shows on a page of an app below it, without that app importing it.

Dependencies point one way (conflicts → agents → articles → kbreview), yet the dashboard (the shell's page) and
the article pages (articles') show conflicts. Such a page names its slot and shows whatever is registered there;
the app above registers its panels from its AppConfig.ready, by dotted path, so starting a process imports no view.
A panel is a function (request, **the page's objects) returning HTML, or "" when it has nothing to show there."""
from __future__ import annotations

from django.utils.module_loading import import_string

# The pages that take panels, and the objects each passes to them as keywords.
DASHBOARD = "dashboard"  # kbreview.views.shell.home: none
ARTICLE_DETAIL = "article_detail"  # articles.views.articles.article_detail: article
ARTICLE_RESTORE = "article_restore"  # the restore confirmation: article, version (None: undeleting the article)

_slots: dict[str, list[str]] = {}


def panel_register(*, slot: str, panel: str) -> None:
    """Show `panel` (the dotted path of the function) on the pages of `slot`."""
    panels = _slots.setdefault(slot, [])
    if panel not in panels:  # ready() can run again (a test reloading apps): register once
        panels.append(panel)


def panels_render(*, slot: str, request, **objects) -> list[str]:
    """The HTML of each panel registered in `slot` that has something to show, in the order they registered."""
    return [html for path in _slots.get(slot, ()) if (html := import_string(path)(request, **objects))]
