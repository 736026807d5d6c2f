"""Panels: a page shows what the apps above it registered for its slot, in order, leaving out empty ones."""
from django.test import RequestFactory

from kbreview import panels


def greeting(request, *, name):
    return f"<p>hello {name}</p>"


def nothing(request, *, name):
    return ""


def farewell(request, *, name):
    return f"<p>bye {name}</p>"


def test_a_slot_shows_its_panels_in_order_without_the_empty_ones_and_each_once():
    slot = "test-panels-order"
    for panel in ("greeting", "nothing", "farewell", "greeting"):
        panels.panel_register(slot=slot, panel=f"{__name__}.{panel}")
    request = RequestFactory().get("/")
    assert panels.panels_render(slot=slot, request=request, name="Ada") == ["<p>hello Ada</p>", "<p>bye Ada</p>"]


def test_a_slot_nobody_filled_shows_nothing():
    assert panels.panels_render(slot="test-panels-empty", request=RequestFactory().get("/")) == []


def test_conflicts_fills_the_dashboard_and_the_article_pages():
    registered = {slot: [path.split(".")[0] for path in paths] for slot, paths in panels._slots.items()}
    for slot in (panels.DASHBOARD, panels.ARTICLE_DETAIL, panels.ARTICLE_RESTORE):
        assert registered[slot] == ["conflicts"]
