"""Forms for sources and drift review: they parse; the services in articles.sources* validate and write."""
from __future__ import annotations

from django import forms

from articles.models import GonePolicy, SourceKind, SourceSchedule


class SourceForm(forms.Form):
    name = forms.CharField(max_length=200)
    kind = forms.ChoiceField(choices=SourceKind.choices, initial=SourceKind.URLS)
    location = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "placeholder": "https://help.example.com/returns\nhttps://help.example.com/shipping"}),
        help_text="Page URLs one per line, a sitemap's URL, or a folder path on the server; empty for uploaded files.",
    )
    schedule = forms.ChoiceField(choices=SourceSchedule.choices, initial=SourceSchedule.OFF)
    gone_policy = forms.ChoiceField(choices=GonePolicy.choices, initial=GonePolicy.CONFIRM, label="Pages gone from the source")

    def add_service_error(self, message: str) -> None:
        """A service's "field: message" goes under that field (anything else above the form)."""
        field, _, rest = message.partition(":")
        if field in self.fields and rest:
            self.add_error(field, rest.strip())
        else:
            self.add_error(None, message)


class DriftMergeForm(forms.Form):
    title = forms.CharField(max_length=500)
    body = forms.CharField(widget=forms.Textarea(attrs={"rows": 12}))
    note = forms.CharField(max_length=2000, required=False)


class DriftKeepForm(forms.Form):
    note = forms.CharField(max_length=2000, required=False)
