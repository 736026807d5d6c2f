"""Forms of the review console: they parse and validate; services do the writing."""
from __future__ import annotations

import datetime as dt

from django import forms
from django.utils import timezone

from conflicts.models import (
    CAVEAT_MAX_LENGTH,
    AnswerMode,
    AnswerPolicy,
    ConflictStatus,
    ConflictType,
    ReviewWinner,
    TokenScope,
)
from conflicts.selectors import QUEUE_SORTS
from conflicts.services import ArticleFix
from conflicts.services.policy import caveat_problem

QUERY_MAX_CHARS = 200


class QueueFilterForm(forms.Form):
    status = forms.ChoiceField(choices=ConflictStatus.choices, required=False)
    type = forms.ChoiceField(choices=[("", "All types"), *ConflictType.choices], required=False)
    q = forms.CharField(required=False, max_length=QUERY_MAX_CHARS, label="Search")
    article = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)
    regressed = forms.BooleanField(required=False, label="Regressed only")
    assignee = forms.ChoiceField(
        choices=[("", "Anyone"), ("mine", "Assigned to me"), ("unassigned", "Unassigned")], required=False, label="Assigned"
    )
    snoozed = forms.BooleanField(required=False, label="Snoozed only")
    sort = forms.ChoiceField(
        choices=[("impact", "Impact"), ("recent", "Most recent"), ("seen", "Times seen"), ("reviewed", "Reviewed last")],
        required=False,
    )

    def values(self) -> dict:
        """The cleaned filters with defaults; a field that does not validate falls back to its default on its
        own (the others still apply). An over-long search is not dropped silently: see query_problem()."""
        self.is_valid()
        data = self.cleaned_data  # only the fields that validated
        sort = data.get("sort") or "impact"
        return {
            "status": data.get("status") or ConflictStatus.OPEN,
            "type": data.get("type") or "",
            "query": (data.get("q") or "").strip(),
            "article_id": data.get("article"),
            "regressed": bool(data.get("regressed")),
            "assignee": data.get("assignee") or "",
            "snoozed": bool(data.get("snoozed")),
            "sort": sort if sort in QUEUE_SORTS else "impact",
        }


    def query_problem(self) -> str:
        """What is wrong with the search as typed, or "" (the queue then shows nothing rather than everything)."""
        if "q" not in self.errors:
            return ""
        length = len(self.data.get("q", ""))
        return (f"The search is {length} characters long; at most {QUERY_MAX_CHARS} are searched. "
                "Shorten it (a few words, \"quoted phrases\" and -exclusions work best).")

    def raw_query(self) -> str:
        return str(self.data.get("q", ""))[:2000]


class SnoozeForm(forms.Form):
    """Until a date, and/or until seen N more times; at least one."""

    until = forms.DateField(required=False, label="until", widget=forms.DateInput(attrs={"type": "date"}))
    more_sightings = forms.IntegerField(required=False, min_value=1, max_value=100_000, label="or until seen N more times")

    def clean(self):
        data = super().clean()
        if not self.errors and not data.get("until") and not data.get("more_sightings"):
            raise forms.ValidationError("Snooze until a date or for a number of sightings.")
        if data.get("until") and data["until"] <= timezone.localdate():
            self.add_error("until", "Pick a date after today.")
        return data

    def until_moment(self):
        """The snooze date as the start of that day in the current time zone."""
        until = self.cleaned_data.get("until")
        return timezone.make_aware(dt.datetime.combine(until, dt.time.min)) if until else None


BULK_ACTIONS = {
    "dismiss": "Dismiss",
    "assign": "Assign",
    "snooze": "Snooze",
    "delete_older": "Resolve by deleting the older article",
}


class BulkActionForm(SnoozeForm):
    """One action on the selected conflicts; each field is checked only for the action that needs it."""

    # Enter in the reason field submits without a button's value: that is the first action, dismiss.
    action = forms.ChoiceField(choices=list(BULK_ACTIONS.items()), required=False)
    ids = forms.TypedMultipleChoiceField(coerce=int, choices=(), error_messages={"required": "Select at least one conflict."})
    reason = forms.CharField(max_length=2000, required=False)
    assignee = forms.TypedChoiceField(coerce=int, choices=(), required=False, empty_value=None)

    def __init__(self, *args, reviewers=(), **kwargs):
        super().__init__(*args, **kwargs)
        # The ids are checked against the knowledge base in the view; here only that they are integers.
        raw = self.data.getlist("ids") if hasattr(self.data, "getlist") else self.data.get("ids", [])
        self.fields["ids"].choices = [(value, value) for value in raw]
        self.fields["assignee"].choices = [("", "No one"), *((u.pk, u.get_username()) for u in reviewers)]

    def clean(self):
        data = forms.Form.clean(self)
        action = data["action"] = data.get("action") or "dismiss"
        if action == "dismiss" and not (data.get("reason") or "").strip():
            self.add_error("reason", "A reason is required to dismiss.")
        if action == "snooze":
            return super().clean()
        return data


class AssignForm(forms.Form):
    assignee = forms.TypedChoiceField(coerce=int, choices=(), required=False, empty_value=None, label="Assign to")

    def __init__(self, *args, reviewers=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["assignee"].choices = [("", "No one"), *((u.pk, u.get_username()) for u in reviewers)]


class CommentForm(forms.Form):
    text = forms.CharField(max_length=5000, widget=forms.Textarea(attrs={"rows": 2}), label="Comment",
                           error_messages={"required": "Write something to comment."})

    def clean_text(self):
        text = self.cleaned_data["text"].strip()
        if not text:
            raise forms.ValidationError("Write something to comment.")
        return text


class DismissForm(forms.Form):
    reason = forms.CharField(
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Why the difference is intentional.",
        error_messages={"required": "A reason is required to dismiss."},
    )

    def clean_reason(self):
        reason = self.cleaned_data["reason"].strip()
        if not reason:
            raise forms.ValidationError("A reason is required to dismiss.")
        return reason


class ReopenForm(forms.Form):
    note = forms.CharField(max_length=2000, required=False, widget=forms.Textarea(attrs={"rows": 2}))


ACTION_CHOICES = [("keep", "Keep as is"), ("edit", "Edit"), ("delete", "Delete (restorable)")]
SIDES = ("low", "high")


class ResolveForm(forms.Form):
    """Edit either article or both, or delete one; fields are per side: low_* and high_*."""

    low_action = forms.ChoiceField(choices=ACTION_CHOICES, initial="keep", widget=forms.RadioSelect)
    low_body = forms.CharField(required=False, strip=False, widget=forms.Textarea(attrs={"rows": 12}))
    low_expected_version_id = forms.IntegerField(widget=forms.HiddenInput)
    high_action = forms.ChoiceField(choices=ACTION_CHOICES, initial="keep", widget=forms.RadioSelect)
    high_body = forms.CharField(required=False, strip=False, widget=forms.Textarea(attrs={"rows": 12}))
    high_expected_version_id = forms.IntegerField(widget=forms.HiddenInput)
    winner = forms.ChoiceField(
        choices=[("", "Let the edit decide"), *ReviewWinner.choices], required=False, label="Which side was right"
    )
    note = forms.CharField(required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args, conflict=None, **kwargs):
        self.conflict = conflict
        super().__init__(*args, **kwargs)
        # A finding about one article: its article alone, and no side to name as right.
        self.sides = SIDES if conflict is None or conflict.is_pair else ("low",)
        if self.sides != SIDES:
            for name in ("high_action", "high_body", "high_expected_version_id", "winner"):
                del self.fields[name]

    def clean(self):
        data = super().clean()
        conflict = self.conflict
        if conflict is None or self.errors:
            return data
        articles = {"low": conflict.article_low, "high": conflict.article_high}
        actions = {side: data.get(f"{side}_action") for side in self.sides}
        if len(actions) > 1 and all(action == "delete" for action in actions.values()):
            raise forms.ValidationError("Delete at most one of the two articles; edit the other or keep it.")
        for side in self.sides:
            if actions[side] != "edit":
                continue
            body = (data.get(f"{side}_body") or "").strip()
            current = articles[side].current_version
            if not body:
                self.add_error(f"{side}_body", "The text cannot be empty; choose Delete to remove the article.")
            elif current is not None and body == current.body.strip():
                self.add_error(f"{side}_body", "The text is unchanged; edit it or choose Keep as is.")
        if all(action == "keep" for action in actions.values()) and not (data.get("note") or "").strip():
            raise forms.ValidationError(
                "Edit or delete an article, or say in a note what was done." if len(actions) > 1
                else "Edit or delete the article, or say in a note what was done (e.g. the model is wrong: dismiss instead)."
            )
        return data

    def fixes(self) -> list[ArticleFix]:
        conflict, data = self.conflict, self.cleaned_data
        ids = {"low": conflict.article_low_id, "high": conflict.article_high_id}
        fixes = []
        for side in self.sides:
            action = data[f"{side}_action"]
            if action == "keep":
                continue
            fixes.append(
                ArticleFix(
                    article_id=ids[side],
                    expected_version_id=data[f"{side}_expected_version_id"],
                    action=action,
                    body=(data.get(f"{side}_body") or "").strip() if action == "edit" else "",
                )
            )
        return fixes


class ResyncForm(forms.Form):
    full = forms.BooleanField(required=False, label="Re-embed every article (not only stale ones)")


class ApiTokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="Which chatbot uses it.")
    scopes = forms.MultipleChoiceField(choices=TokenScope.choices, initial=TokenScope.values,
                                       widget=forms.CheckboxSelectMultiple, label="May")
    expires_days = forms.IntegerField(required=False, min_value=1, max_value=3650, label="Expires after (days)",
                                      help_text="empty: until revoked")

    def expires_at(self):
        days = self.cleaned_data.get("expires_days")
        return timezone.now() + dt.timedelta(days=days) if days else None

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError("Give the token a name.")
        return name


class PlaygroundForm(forms.Form):
    """A question for the answer playground, and the intent to decode it with."""

    question = forms.CharField(max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))
    mode = forms.ChoiceField(choices=AnswerMode.choices)


class AnswerSettingsForm(forms.Form):
    default_mode = forms.ChoiceField(choices=AnswerMode.choices, label="Default answer mode")
    record_model_disagreements = forms.BooleanField(
        required=False, label="Record “the model disagrees with this article” findings",
        help_text="When the answer path's memory filter sides with the model's own memory against an article, list it "
                  "in the queue and on the article. Off by default: a small model's memory is weak.",
    )


class AnswerPolicyForm(forms.Form):
    policy = forms.ChoiceField(choices=AnswerPolicy.choices, widget=forms.RadioSelect, label="Answer policy")
    caveat_text = forms.CharField(
        max_length=CAVEAT_MAX_LENGTH, label="Caveat sentence",
        help_text=f"In your words, one line, at most {CAVEAT_MAX_LENGTH} characters; added to a reply that cites an "
                  "article in an open conflict (policy caveat).",
    )
    prefer_threshold = forms.FloatField(
        min_value=0.0, max_value=1.0, label="Suggestion confidence needed",
        help_text="0 to 1: prefer the suggested side / quarantine act only on a suggestion at least this confident.",
    )

    def clean_caveat_text(self):

        text = self.cleaned_data["caveat_text"].strip()
        problem = caveat_problem(text)
        if problem:
            raise forms.ValidationError(problem[0].upper() + problem[1:] + ".")
        return text
