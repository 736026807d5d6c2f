"""Every URL pattern of the console, and the ids each one takes, for tests that walk them all."""
from __future__ import annotations

from django.urls import URLPattern
from django.views.generic import RedirectView

from articles import urls as article_urls
from articles.models import DriftItem, Source, SourceFile, SourcePage, SourceSync
from conflicts import urls as conflict_urls
from kbreview import urls as project_urls

# Views outside any knowledge base (signing in and out, choosing one): no object ids, no KB role.
NOT_KB_VIEWS = {"login", "logout", "kb_switch"}
# Views where any member, a viewer too, changes only their own settings (tested on their own).
OWN_SETTINGS_VIEWS = {"notification_preferences", "notification_email"}
# Which object a pattern's `pk` names, by the start of the pattern's name (longest prefix first).
PK_OWNERS = {"conflict": "conflict", "article": "article", "ops_sync_job": "sync_job", "ops_token": "token",
             "rule": "rule", "source_sync_progress": "source_sync", "source_page": "source_page",
             "source_file": "upload_source", "source": "source", "drift": "drift", "ops_webhook": "webhook", "ops_delivery": "delivery"}


def console_patterns():
    """(name, converters) of every console URL pattern."""
    for pattern in [*project_urls.shell_urlpatterns, *article_urls.urlpatterns, *conflict_urls.urlpatterns]:
        assert isinstance(pattern, URLPattern), "nested URL confs need walking too"
        if pattern.name is None:
            # Only fixed redirects (the favicon) may go unnamed: they show no data and change nothing.
            assert getattr(pattern.callback, "view_class", None) is RedirectView, pattern
            continue
        yield pattern.name, pattern.pattern.converters


def console_kwargs(name: str, converters, objects: dict) -> dict:
    """URL kwargs for pattern `name` from `objects` (conflict, article, version, sync_job, token, rule).
    A new pattern with ids fails here until PK_OWNERS says which object they name: that is the point."""
    if not converters:
        return {}
    key = next((PK_OWNERS[prefix] for prefix in sorted(PK_OWNERS, key=len, reverse=True) if name.startswith(prefix)), None)
    assert key is not None, f"URL pattern {name!r} takes ids; say in PK_OWNERS which object they name"
    kwargs = {"pk": objects[key].pk}
    if "version_pk" in converters:
        kwargs["version_pk"] = objects["version"].pk
    if "decision" in converters:
        kwargs["decision"] = "keep"
    if "file_pk" in converters:
        kwargs["file_pk"] = objects["source_file"].pk
    assert set(kwargs) == set(converters), (name, converters)
    return kwargs


def source_objects(knowledge_base, article, prefix: str) -> dict:
    """A source with a sync, a page gone from it and a pending source change, for the URLs that name them."""
    source = Source.objects.create(knowledge_base=knowledge_base, name=f"{prefix} pages", kind="urls",
                                   location=f"https://{prefix}.example.org/a")
    page = SourcePage.objects.create(source=source, key=f"https://{prefix}.example.org/a", article=article,
                                     state="gone_pending")
    uploads = Source.objects.create(knowledge_base=knowledge_base, name=f"{prefix} uploads", kind="upload")
    return {
        "source": source,
        "upload_source": uploads,
        "source_file": SourceFile.objects.create(source=uploads, name="faq.md", content=b"# FAQ\n\nText.\n", size=14,
                                                 sha256="0" * 64),
        "source_sync": SourceSync.objects.create(knowledge_base=knowledge_base, source=source),
        "source_page": page,
        "drift": DriftItem.objects.create(knowledge_base=knowledge_base, article=article, page=page,
                                          console_version=article.current_version, source_title="Fares",
                                          source_body="A ticket costs €30."),
    }


def notification_objects(knowledge_base, conflict, prefix: str) -> dict:
    """A webhook and a failed delivery of one of its events, for the URLs that name them."""
    from django.utils import timezone

    from conflicts.models import NotificationDelivery, NotificationEvent
    from conflicts.services.notifications import webhook_create

    webhook, _ = webhook_create(knowledge_base=knowledge_base, url=f"https://93.184.215.14/{prefix}",
                                events=["conflict.new"])
    event = NotificationEvent.objects.create(knowledge_base=knowledge_base, conflict=conflict, kind="conflict.new")
    delivery = NotificationDelivery.objects.create(
        knowledge_base=knowledge_base, channel="webhook", event=event, webhook=webhook, target=webhook.url, body="{}",
        status="failed", attempts=3, next_attempt_at=timezone.now(), last_error="HTTP 500 from the receiver",
    )
    return {"webhook": webhook, "delivery": delivery}
