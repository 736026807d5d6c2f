"""Notifications in the console: each member's own e-mail choice; for ops, the knowledge base's settings,
its webhooks (secret shown once) and the delivery log with "send again"."""
from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from articles.models import Role
from articles.permissions import kb_view
from conflicts import selectors
from conflicts.models import DeliveryStatus, NotificationDelivery, Webhook
from conflicts.notification_forms import (
    NotificationEmailForm,
    NotificationPreferenceForm,
    NotificationSettingsForm,
    WebhookForm,
)
from conflicts.services.notifications import (
    NotificationInputError,
    notification_delivery_retry,
    notification_email_set,
    notification_preference_set,
    notification_settings_for,
    notification_settings_update,
    webhook_create,
    webhook_delete,
    webhook_rotate_secret,
    webhook_set_active,
)
from kbreview.views.common import get_in_kb_or_404, render_page

OPS_TEMPLATE = "conflicts/notifications.html"
MINE_TEMPLATE = "conflicts/notification_preferences.html"


def _settings_form(kb) -> NotificationSettingsForm:
    row = notification_settings_for(kb.pk)
    return NotificationSettingsForm(initial={"min_seen": row.min_seen, "min_cited": row.min_cited,
                                             "email_recipients": "\n".join(row.email_recipients),
                                             "email_mode": row.email_mode})


def ops_context(request, **extra) -> dict:
    status = request.GET.get("status", "")
    status = status if status in DeliveryStatus.values else ""
    counts = selectors.notification_delivery_counts(knowledge_base=request.kb)
    return {
        "settings_form": _settings_form(request.kb),
        "webhook_form": WebhookForm(),
        "webhooks": list(selectors.webhooks(knowledge_base=request.kb)),
        "deliveries": selectors.notification_deliveries(knowledge_base=request.kb, status=status),
        "status_filter": status,
        "status_tabs": [(value, label, counts[value]) for value, label in DeliveryStatus.choices],
        "allow_private": request.kb.allow_private_fetch,
        "new_secret": "",
        **extra,
    }


def _submit(form, call):
    """The service's result for a valid form, else None; a refusal by the service becomes the error of the
    field it names, so the form comes back with what was typed."""
    if not form.is_valid():
        return None
    try:
        return call(form.cleaned_data)
    except NotificationInputError as exc:
        form.add_error(exc.field if exc.field in form.fields else None, str(exc))
        return None


def _with_secret(response):
    response["Cache-Control"] = "no-store"  # the secret is in this response only
    return response


@kb_view(read=Role.OPS, write=Role.OPS)
def ops_notifications(request):
    return render_page(request, OPS_TEMPLATE, ops_context(request), partial="deliveries")


@kb_view(read=Role.OPS, write=Role.OPS)
@require_POST
def ops_notification_settings(request):
    form = NotificationSettingsForm(request.POST)
    _submit(form, lambda data: notification_settings_update(knowledge_base=request.kb, actor=request.user, **data))
    if form.errors:
        return render_page(request, OPS_TEMPLATE, ops_context(request, settings_form=form), partial="settings", status=400)
    if not request.htmx:
        messages.success(request, "Notification settings saved.")
        return redirect(reverse("ops_notifications"))
    return render_page(request, OPS_TEMPLATE, ops_context(request, settings_saved=True), partial="settings")


@kb_view(read=Role.OPS, write=Role.OPS)
@require_POST
def ops_webhook_create(request):
    form = WebhookForm(request.POST)
    created = _submit(form, lambda data: webhook_create(knowledge_base=request.kb, actor=request.user, **data))
    if created is None:
        return render_page(request, OPS_TEMPLATE, ops_context(request, webhook_form=form), partial="webhooks", status=400)
    secret = created[1]
    # Rendered in this response only (no redirect, nothing in the session): it cannot be shown again.
    return _with_secret(render_page(request, OPS_TEMPLATE, ops_context(request, new_secret=secret), partial="webhooks",
                                    status=201))


@kb_view(read=Role.OPS, write=Role.OPS)
@require_POST
def ops_webhook_rotate(request, pk: int):
    webhook = get_in_kb_or_404(Webhook.objects.all(), knowledge_base=request.kb, pk=pk)
    _, secret = webhook_rotate_secret(webhook=webhook, actor=request.user)
    return _with_secret(render_page(request, OPS_TEMPLATE, ops_context(request, new_secret=secret), partial="webhooks"))


def _webhooks_after_change(request):
    if not request.htmx:
        return redirect(reverse("ops_notifications"))
    return render_page(request, OPS_TEMPLATE, ops_context(request), partial="webhooks")


@kb_view(read=Role.OPS, write=Role.OPS)
@require_POST
def ops_webhook_toggle(request, pk: int):
    webhook = get_in_kb_or_404(Webhook.objects.all(), knowledge_base=request.kb, pk=pk)
    webhook_set_active(webhook=webhook, active=not webhook.active, actor=request.user)
    return _webhooks_after_change(request)


@kb_view(read=Role.OPS, write=Role.OPS)
@require_POST
def ops_webhook_delete(request, pk: int):
    webhook = get_in_kb_or_404(Webhook.objects.all(), knowledge_base=request.kb, pk=pk)
    webhook_delete(webhook=webhook, actor=request.user)
    return _webhooks_after_change(request)


@kb_view(read=Role.OPS, write=Role.OPS)
@require_POST
def ops_delivery_retry(request, pk: int):
    delivery = get_in_kb_or_404(NotificationDelivery.objects.all(), knowledge_base=request.kb, pk=pk)
    try:
        notification_delivery_retry(delivery=delivery, actor=request.user)
    except NotificationInputError as exc:
        return render_page(request, OPS_TEMPLATE, ops_context(request, delivery_error=str(exc)), partial="deliveries",
                           status=409)
    if not request.htmx:
        messages.success(request, "Queued to be sent again.")
        return redirect(reverse("ops_notifications"))
    return render_page(request, OPS_TEMPLATE, ops_context(request), partial="deliveries")


def _mine_context(request, **extra) -> dict:
    current = selectors.notification_preference(user=request.user, knowledge_base=request.kb)
    return {"form": NotificationPreferenceForm(initial={"email_mode": current}),
            "email_form": NotificationEmailForm(initial={"email": request.user.email}),
            "saved": False, "email_saved": False, "has_email": bool(request.user.email), **extra}


@kb_view(read=Role.VIEWER, write=Role.VIEWER)
def notification_preferences(request):
    """Each member's own choice for this knowledge base (a viewer may choose too: it changes only their mail)."""
    if request.method != "POST":
        return render_page(request, MINE_TEMPLATE, _mine_context(request))
    form = NotificationPreferenceForm(request.POST)
    saved = form.is_valid()
    if saved:
        notification_preference_set(user=request.user, knowledge_base=request.kb,
                                    email_mode=form.cleaned_data["email_mode"])
    return render_page(request, MINE_TEMPLATE, _mine_context(request, form=form, saved=saved), partial="preference",
                       status=200 if saved else 400)


@kb_view(read=Role.VIEWER, write=Role.VIEWER)
@require_POST
def notification_email(request):
    """A member sets their own e-mail address (no administrator needed)."""
    form = NotificationEmailForm(request.POST)
    _submit(form, lambda data: notification_email_set(user=request.user, knowledge_base=request.kb, email=data["email"]))
    if form.errors:
        return render_page(request, MINE_TEMPLATE, _mine_context(request, email_form=form), partial="email", status=400)
    if not request.htmx:
        messages.success(request, "E-mail address saved.")
        return redirect(reverse("notification_preferences"))
    return render_page(request, MINE_TEMPLATE, _mine_context(request, email_saved=True), partial="email")
