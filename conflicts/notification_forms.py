"""Forms of the notification pages: they parse and validate; conflicts.services.notifications writes."""
from __future__ import annotations

import re

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from conflicts.models import EmailMode, NotificationEventKind


class WebhookForm(forms.Form):
    url = forms.URLField(max_length=1000, assume_scheme="https", label="Receiver URL",
                         help_text="http(s); private addresses only if the knowledge base allows them.")
    events = forms.MultipleChoiceField(choices=NotificationEventKind.choices, widget=forms.CheckboxSelectMultiple,
                                       initial=NotificationEventKind.values, label="Events")


class NotificationSettingsForm(forms.Form):
    min_seen = forms.IntegerField(min_value=1, max_value=1_000_000, label="Announce a new conflict once seen in",
                                  help_text="turns")
    min_cited = forms.IntegerField(min_value=1, max_value=1_000_000, label="…or once cited by", help_text="replies")
    email_recipients = forms.CharField(required=False, max_length=5000, label="Addresses (not members)",
                                       widget=forms.Textarea(attrs={"rows": 2}),
                                       help_text="e.g. a team inbox; one per line or separated by commas")
    email_mode = forms.ChoiceField(choices=EmailMode.choices, label="These addresses get")

    def clean_email_recipients(self) -> list[str]:
        addresses = [a for a in re.split(r"[\s,;]+", self.cleaned_data["email_recipients"]) if a]
        for address in addresses:
            try:
                validate_email(address)
            except ValidationError:
                raise ValidationError(f"{address!r} is not an e-mail address.") from None
        if len(addresses) > 50:
            raise ValidationError("At most 50 addresses.")
        return addresses


class NotificationPreferenceForm(forms.Form):
    email_mode = forms.ChoiceField(choices=EmailMode.choices, label="E-mail me", widget=forms.RadioSelect)


class NotificationEmailForm(forms.Form):
    email = forms.EmailField(required=False, max_length=254, label="My e-mail address",
                             help_text="Where your notifications go; leave empty for none.")
