"""Forms for articles, sources and drift review: they parse; the services in articles.services and articles.sources*
validate and write."""
from __future__ import annotations

import json

from django import forms

from articles.models import GonePolicy, SourceKind, SourceSchedule

TITLE_MAX_CHARS = 500  # Article.title / ArticleVersion.title


class TitleField(forms.CharField):
    """An article title: at most TITLE_MAX_CHARS, said at the form. No `maxlength` on the input: the browser
    cut a pasted long title there mid-word without a word; the page counts as you type (console.js) and the
    server names the length."""

    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", f"At most {TITLE_MAX_CHARS} characters.")
        super().__init__(max_length=TITLE_MAX_CHARS, error_messages={
            "max_length": "The title is %(show_value)d characters long; at most %(limit_value)d fit. Shorten it."}, **kwargs)

    def widget_attrs(self, widget):
        attrs = super().widget_attrs(widget)
        attrs.pop("maxlength", None)
        attrs["data-max-chars"] = str(TITLE_MAX_CHARS)
        return attrs


class ArticleEditForm(forms.Form):
    title = TitleField()
    body = forms.CharField(strip=False, widget=forms.Textarea(attrs={"rows": 14}))
    expected_version_id = forms.IntegerField(widget=forms.HiddenInput)
    note = forms.CharField(required=False, max_length=2000)

    def clean_body(self):
        body = self.cleaned_data["body"].strip()
        if not body:
            raise forms.ValidationError("The text cannot be empty.")
        return body


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
