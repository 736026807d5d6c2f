"""Forms for sources and drift review: they parse; the services in articles.sources* validate and write."""
from __future__ import annotations

import json

from django import forms

from articles.models import GonePolicy, SourceKind, SourceSchedule
from conflicts.forms import TitleField

# What the location holds, per kind: the field's placeholder follows the chosen kind (static/js/console.js).
LOCATION_PLACEHOLDERS = {
    SourceKind.URLS: "https://help.example.com/returns\nhttps://help.example.com/shipping",
    SourceKind.SITEMAP: "https://help.example.com/sitemap.xml",
    SourceKind.FOLDER: "/srv/knowledge/faq (a folder under SOURCE_FOLDER_ROOTS)",
    SourceKind.UPLOAD: "Leave empty: upload the files on the source's page once it is added.",
}


class SourceForm(forms.Form):
    name = forms.CharField(max_length=200)
    kind = forms.ChoiceField(choices=SourceKind.choices, initial=SourceKind.URLS)
    location = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="Page URLs one per line, a sitemap's URL, or a folder path on the server; empty for uploaded files.",
    )
    schedule = forms.ChoiceField(choices=SourceSchedule.choices, initial=SourceSchedule.OFF)
    gone_policy = forms.ChoiceField(choices=GonePolicy.choices, initial=GonePolicy.CONFIRM, label="Pages gone from the source")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        kind = (self.data.get("kind") if self.is_bound else None) or self.initial.get("kind") or SourceKind.URLS
        attrs = self.fields["location"].widget.attrs
        attrs["placeholder"] = LOCATION_PLACEHOLDERS.get(kind, LOCATION_PLACEHOLDERS[SourceKind.URLS])
        attrs["data-placeholders"] = json.dumps({str(k): v for k, v in LOCATION_PLACEHOLDERS.items()})

    def add_service_error(self, message: str) -> None:
        """A service's "field: message" goes under that field (anything else above the form)."""
        field, _, rest = message.partition(":")
        if field in self.fields and rest:
            self.add_error(field, rest.strip())
        else:
            self.add_error(None, message)


class DriftMergeForm(forms.Form):
    title = TitleField()
    body = forms.CharField(widget=forms.Textarea(attrs={"rows": 12}))
    note = forms.CharField(max_length=2000, required=False)


class DriftKeepForm(forms.Form):
    note = forms.CharField(max_length=2000, required=False)
