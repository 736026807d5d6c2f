"""Reviewing conflicts: resolve (fix the source), dismiss, reopen, regress. A conflict's status changes in
one function, `conflict_transition`, which writes its timeline row; entries that change no status (detected,
assigned, a comment, a snooze) go through `conflict_activity_note`. Both write the timeline (ConflictActivity)
through `_activity_write`, its only writer; the audit log of everything else is articles.audit."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

from django.db import transaction
from django.utils import timezone

from articles.indexing import article_reindex
from articles.models import Article, ArticleStatus, ArticleVersion, Membership, Role, VersionReason
from articles.services import StaleVersionError, article_delete, article_edit
from conflicts.models import (
    ActivityKind,
    Conflict,
    ConflictActivity,
    ConflictStatus,
    ConflictSubstatus,
    ReviewWinner,
)
from conflicts.services.notifications import notify_assignment, notify_conflict_sighting, notify_regression
from conflicts.services.suggestions import suggestion_enqueue, suggestion_record_use

_KIND_FOR_STATUS = {
    ConflictStatus.PROCESSED: ActivityKind.RESOLVED,
    ConflictStatus.DISMISSED: ActivityKind.DISMISSED,
    ConflictStatus.OPEN: ActivityKind.REOPENED,
}
_STATUS_KINDS = {*_KIND_FOR_STATUS.values(), ActivityKind.REGRESSED}
# Every human review clears what a regression marked, and a snooze (it only hides open conflicts).
_REVIEW_RESETS = {
    "substatus": ConflictSubstatus.NONE,
    "recurred_after_review": False,
    "snoozed_until": None,
    "snoozed_until_seen": None,
}


class ConflictStateError(Exception):
    """The conflict is not in a state that allows this (e.g. someone else resolved it first)."""


@dataclass(frozen=True)
class ArticleFix:
    article_id: int
    expected_version_id: int
    action: Literal["edit", "delete"]
    body: str = ""
    title: str | None = None


def _activity_write(
    *, conflicts: list[Conflict], kind: str, from_status: str | None = None, actor=None, note: str = "", detail=None
) -> list[ConflictActivity]:
    """The one writer of conflicts' timelines, one insert however many; each conflict's `status` is the status
    after the entry, and `from_status` the one before (None: the same, an entry that changes no status)."""
    return ConflictActivity.objects.bulk_create([
        ConflictActivity(conflict=conflict, kind=kind, actor=actor, from_status=from_status or conflict.status,
                         to_status=conflict.status, note=note, detail=detail or {})
        for conflict in conflicts
    ])


def conflict_transition(
    *,
    conflict: Conflict,
    to_status: str,
    from_statuses: tuple[str, ...],
    actor=None,
    note: str = "",
    detail=None,
    kind: str | None = None,
    **fields,
) -> ConflictActivity:
    """Move a conflict between statuses under a row lock, set `fields` with it, and write the timeline row
    (`kind`: by default the one for the new status). Returns that row; its `.conflict` is the changed conflict.

    `from_statuses` are the states the caller saw; if another reviewer moved it meanwhile the change is
    refused and nothing is written. The caller's instance gets the change too (detection holds it locked
    and goes on with it).
    """
    with transaction.atomic():
        locked = Conflict.objects.select_for_update().get(pk=conflict.pk)
        if locked.status not in from_statuses:
            who = f" by {locked.reviewed_by}" if locked.reviewed_by_id else ""
            raise ConflictStateError(f"This conflict is already {locked.get_status_display().lower()}{who}; reload to see it.")
        previous = locked.status
        changes = {"status": to_status, **fields}
        for name, value in changes.items():
            setattr(locked, name, value)
        locked.save(update_fields=list(changes))
        for name, value in changes.items():
            setattr(conflict, name, value)
        [entry] = _activity_write(conflicts=[locked], kind=kind or _KIND_FOR_STATUS[to_status], from_status=previous,
                                  actor=actor, note=note, detail=detail)
        return entry


def conflict_activity_note(
    *, conflict: Conflict, kind: str, actor=None, note: str = "", **detail
) -> ConflictActivity:
    """A timeline entry that changes no status (detected, assigned, a comment, a snooze and its end);
    status changes go through conflict_transition."""
    [entry] = conflict_activity_notes(conflicts=[conflict], kind=kind, actor=actor, note=note, **detail)
    return entry


def conflict_activity_notes(
    *, conflicts: list[Conflict], kind: str, actor=None, note: str = "", **detail
) -> list[ConflictActivity]:
    """The same entry on several conflicts' timelines in one insert (a check that opens several conflicts)."""
    if kind in _STATUS_KINDS:
        raise ValueError(f"{kind!r} changes a conflict's status: use conflict_transition")
    return _activity_write(conflicts=conflicts, kind=kind, actor=actor, note=note, detail=detail)


def _versions_left_current(article_ids) -> dict[int, int | None]:
    """Each article's current version after a review; None for a deleted one (its text left retrieval)."""
    rows = Article.objects.filter(pk__in=article_ids).values_list("pk", "current_version_id", "status")
    return {pk: (None if status == ArticleStatus.DELETED else version_id) for pk, version_id, status in rows}


def _infer_winner(conflict: Conflict, fixed_ids: set[int]) -> str:
    """The edited or deleted article lost; both touched means neither was right as it stood. A one-article
    finding has no sides (and no place among the Observer's decisions)."""
    if not conflict.is_pair:
        return ""
    if fixed_ids == {conflict.article_low_id}:
        return ReviewWinner.HIGH
    if fixed_ids == {conflict.article_high_id}:
        return ReviewWinner.LOW
    if fixed_ids:
        return ReviewWinner.NEITHER
    return ""


def conflict_resolve(
    *, conflict: Conflict, fixes: list[ArticleFix], actor=None, note: str = "", winner: str = ""
) -> Conflict:
    """Apply the fixes and mark the conflict processed in one transaction, then re-index the edited
    articles before returning, so retrieval shows the fix from the very next question.

    A fix made from a stale version raises articles.services.StaleVersionError and nothing is written.
    """
    pair = {conflict.article_low_id, conflict.article_high_id} - {None}
    if any(fix.article_id not in pair for fix in fixes):
        raise ConflictStateError(
            "A fix can only change one of the two articles of this conflict." if conflict.is_pair
            else "A fix can only change the article of this finding."
        )
    if not fixes and not note.strip():
        raise ConflictStateError("Say what was done (a note) when resolving without editing either article.")
    if winner and winner not in ReviewWinner.values:
        raise ConflictStateError(f"Unknown winner {winner!r}.")
    if winner and not conflict.is_pair:
        raise ConflictStateError("A finding about one article has no side to name as right.")
    with transaction.atomic():
        # Lock the conflict first: of two reviewers acting at once, the second waits, then is told.
        locked = Conflict.objects.select_for_update().get(pk=conflict.pk)
        if locked.status != ConflictStatus.OPEN:
            raise ConflictStateError(
                f"This conflict is already {locked.get_status_display().lower()}"
                + (f" by {locked.reviewed_by}" if locked.reviewed_by_id else "")
                + "; reload to see it."
            )
        for fix in fixes:
            article = Article.objects.get(pk=fix.article_id)
            if fix.action == "delete":
                article_delete(article=article, expected_version_id=fix.expected_version_id, actor=actor, note=note)
            else:
                article_edit(
                    article=article,
                    expected_version_id=fix.expected_version_id,
                    body=fix.body,
                    title=fix.title,
                    actor=actor,
                    reason=VersionReason.RESOLVE,
                    note=note,
                )
        versions = _versions_left_current(pair)
        resolved = conflict_transition(
            conflict=locked,
            to_status=ConflictStatus.PROCESSED,
            from_statuses=(ConflictStatus.OPEN,),
            actor=actor,
            note=note,
            detail={"fixes": [{"article_id": f.article_id, "action": f.action} for f in fixes]},
            reviewed_by=actor,
            reviewed_at=timezone.now(),
            review_note=note,
            winner=winner or _infer_winner(locked, {f.article_id for f in fixes}),
            reviewed_version_low_id=versions[locked.article_low_id],
            reviewed_version_high_id=versions.get(locked.article_high_id),
            **_REVIEW_RESETS,
        ).conflict
        suggestion_record_use(conflict=resolved)
    for fix in fixes:
        article_reindex(article_id=fix.article_id)
    return resolved


def conflict_dismiss(*, conflict: Conflict, actor=None, reason: str) -> Conflict:
    """The difference is intentional (both are right in their context)."""
    if not reason.strip():
        raise ConflictStateError("A reason is required to dismiss a conflict.")
    versions = _versions_left_current({conflict.article_low_id, conflict.article_high_id} - {None})
    return conflict_transition(
        conflict=conflict,
        to_status=ConflictStatus.DISMISSED,
        from_statuses=(ConflictStatus.OPEN,),
        actor=actor,
        note=reason,
        reviewed_by=actor,
        reviewed_at=timezone.now(),
        review_note=reason,
        winner=ReviewWinner.BOTH if conflict.is_pair else "",
        reviewed_version_low_id=versions[conflict.article_low_id],
        reviewed_version_high_id=versions.get(conflict.article_high_id),
        **_REVIEW_RESETS,
    ).conflict


def conflict_reopen(*, conflict: Conflict, actor=None, note: str = "") -> Conflict:
    reopened = conflict_transition(
        conflict=conflict,
        to_status=ConflictStatus.OPEN,
        from_statuses=(ConflictStatus.PROCESSED, ConflictStatus.DISMISSED),
        actor=actor,
        note=note,
        **_REVIEW_RESETS,
    ).conflict
    suggestion_enqueue(conflict_id=reopened.pk)  # the articles may have changed since the last suggestion
    return reopened


# --- regressions ---------------------------------------------------------------------------------
# Detection calls conflict_regress for every sighting of a reviewed pair; whether it "came back" is
# decided here, in one place, so detectors and the console agree.


def regressed_sides(*, conflict: Conflict, version_low_id: int, version_high_id: int) -> list[str]:
    """The sides ("low", "high") whose text differs from what the review left: a side the review
    deleted is live again, or a newer version has other content than the reviewed one.

    A reviewed pair seen again on the very texts reviewed (a dismissal, a note-only resolution) has
    not come back: the reviewer already saw exactly that.
    """
    if conflict.status == ConflictStatus.OPEN or conflict.reviewed_at is None:
        return []
    seen = {"low": version_low_id, "high": version_high_id}
    reviewed = {"low": conflict.reviewed_version_low_id, "high": conflict.reviewed_version_high_id}
    candidates = [side for side in seen if reviewed[side] is None or seen[side] > reviewed[side]]
    if not candidates:
        return []
    hashes = dict(
        ArticleVersion.objects.filter(pk__in=[*seen.values(), *filter(None, reviewed.values())]).values_list(
            "pk", "content_hash"
        )
    )
    return [
        side for side in candidates if reviewed[side] is None or hashes.get(seen[side]) != hashes.get(reviewed[side])
    ]


def conflict_regress(*, conflict: Conflict, turn, version_low_id: int, version_high_id: int) -> bool:
    """Bring a reviewed conflict back to Open (substatus "regressed") when it was detected again on
    other texts than those reviewed, through conflict_transition, with the timeline row saying which versions
    and which turn.

    The caller (detection) holds the conflict's row lock and saves the instance afterwards; the transition
    changes the instance in place and saves the fields it sets. Returns whether it regressed.
    """
    sides = regressed_sides(conflict=conflict, version_low_id=version_low_id, version_high_id=version_high_id)
    if not sides:
        return False
    numbers = dict(ArticleVersion.objects.filter(pk__in=[version_low_id, version_high_id]).values_list("pk", "number"))
    reviewed_numbers = dict(
        ArticleVersion.objects.filter(
            pk__in=[v for v in (conflict.reviewed_version_low_id, conflict.reviewed_version_high_id) if v]
        ).values_list("pk", "number")
    )
    articles = dict(Article.objects.filter(pk__in=[conflict.article_low_id, conflict.article_high_id]).values_list("pk", "title"))
    changes = []
    for side in sides:
        article_id = conflict.article_low_id if side == "low" else conflict.article_high_id
        seen_id = version_low_id if side == "low" else version_high_id
        reviewed_id = conflict.reviewed_version_low_id if side == "low" else conflict.reviewed_version_high_id
        changes.append(
            {
                "article_id": article_id,
                "title": articles.get(article_id, ""),
                "version": numbers.get(seen_id),
                "reviewed_version": reviewed_numbers.get(reviewed_id),
            }
        )
    activity = conflict_transition(
        conflict=conflict,
        to_status=ConflictStatus.OPEN,
        from_statuses=(ConflictStatus.PROCESSED, ConflictStatus.DISMISSED),
        kind=ActivityKind.REGRESSED,
        note=f"Detected again in turn {turn.external_id} on " + "; ".join(_describe_change(c) for c in changes) + ".",
        detail={"turn": turn.external_id, "turn_id": turn.pk, "changes": changes},
        substatus=ConflictSubstatus.REGRESSED,
        recurred_after_review=True,
    )
    notify_regression(conflict=conflict, activity=activity)
    return True


def _describe_change(change: dict) -> str:
    reviewed = change["reviewed_version"]
    before = f"reviewed v{reviewed}" if reviewed else "deleted by the review"
    return f"{change['title']} v{change['version']} ({before})"


# --- triage as a team: assign, comment, snooze ----------------------------------------------------


def conflict_assign(*, conflict: Conflict, assignee, actor=None) -> Conflict:
    """Give the conflict to a member who may review it (reviewer or ops), or to no one (None)."""

    if assignee is not None:
        membership = Membership.objects.filter(user=assignee, knowledge_base_id=conflict.knowledge_base_id).first()
        if membership is None or not membership.allows(Role.REVIEWER):
            raise ConflictStateError(f"{assignee.get_username()} cannot review conflicts in this knowledge base.")
    with transaction.atomic():
        locked = Conflict.objects.select_for_update().get(pk=conflict.pk)
        if locked.assignee_id == (assignee.pk if assignee else None):
            return locked
        previous = locked.assignee.get_username() if locked.assignee_id else ""
        locked.assignee = assignee
        locked.save(update_fields=["assignee"])
        who = assignee.get_username() if assignee else ""
        activity = conflict_activity_note(conflict=locked, kind=ActivityKind.ASSIGNED, actor=actor,
                                  note=f"Assigned to {who}." if who else "Unassigned.", assignee=who, previous=previous)
        if assignee is not None:
            notify_assignment(conflict=locked, activity=activity, assignee=assignee)
    return locked


def conflict_comment(*, conflict: Conflict, actor, text: str) -> ConflictActivity:
    """A comment in the conflict's activity timeline."""
    text = text.strip()
    if not text:
        raise ConflictStateError("A comment cannot be empty.")
    return conflict_activity_note(conflict=conflict, kind=ActivityKind.COMMENTED, actor=actor, note=text)


def conflict_snooze(*, conflict: Conflict, actor=None, until=None, more_sightings: int | None = None) -> Conflict:
    """Hide an open conflict from the Open tab until a moment and/or until it is seen N more times."""
    if until is None and not more_sightings:
        raise ConflictStateError("Snooze until a date or for a number of sightings.")
    if until is not None and until <= timezone.now():
        raise ConflictStateError("The snooze date must be in the future.")
    if more_sightings is not None and more_sightings < 1:
        raise ConflictStateError("Snooze for at least one more sighting.")
    with transaction.atomic():
        locked = Conflict.objects.select_for_update().get(pk=conflict.pk)
        if locked.status != ConflictStatus.OPEN:
            raise ConflictStateError("Only open conflicts can be snoozed.")
        locked.snoozed_until = until
        locked.snoozed_until_seen = locked.times_seen + more_sightings if more_sightings else None
        locked.save(update_fields=["snoozed_until", "snoozed_until_seen"])
        parts = ([f"until {timezone.localtime(until):%Y-%m-%d %H:%M}"] if until else []) + (
            [f"until seen {more_sightings} more time{'s' if more_sightings != 1 else ''}"] if more_sightings else []
        )
        conflict_activity_note(conflict=locked, kind=ActivityKind.SNOOZED, actor=actor, note="Snoozed " + " or ".join(parts) + ".",
                       until=until.isoformat() if until else None, more_sightings=more_sightings)
    return locked


def conflict_unsnooze(*, conflict: Conflict, actor=None, note: str = "Snooze ended.") -> Conflict:
    """End a snooze now (by hand, or when detection sees it the agreed number of times)."""
    with transaction.atomic():
        locked = Conflict.objects.select_for_update().get(pk=conflict.pk)
        if locked.snoozed_until is None and locked.snoozed_until_seen is None:
            return locked
        locked.snoozed_until = locked.snoozed_until_seen = None
        locked.save(update_fields=["snoozed_until", "snoozed_until_seen"])
        conflict_activity_note(conflict=locked, kind=ActivityKind.UNSNOOZED, actor=actor, note=note)
        notify_conflict_sighting(conflict=locked)  # reached the threshold while asleep: announced now
    return locked


def conflicts_snooze_expire(*, now: dt.datetime | None = None) -> int:
    """End every snooze whose date has passed, each with its "snooze ended" activity row (beat runs
    this every SNOOZE_CHECK_INTERVAL_S; the queue already shows them as awake from that moment).
    Returns how many ended; running it again ends none twice."""
    now = now or timezone.now()
    ended = 0
    due = Conflict.objects.filter(status=ConflictStatus.OPEN, snoozed_until__lte=now).values_list("pk", flat=True)
    for pk in list(due):
        with transaction.atomic():
            locked = Conflict.objects.select_for_update().filter(pk=pk, snoozed_until__lte=now).first()
            if locked is None:  # woken meanwhile (by hand, by a sighting, or by another run of this)
                continue
            until = locked.snoozed_until
            locked.snoozed_until = locked.snoozed_until_seen = None
            locked.save(update_fields=["snoozed_until", "snoozed_until_seen"])
            conflict_activity_note(conflict=locked, kind=ActivityKind.UNSNOOZED,
                           note=f"Snooze ended: {timezone.localtime(until):%Y-%m-%d %H:%M} has passed.",
                           until=until.isoformat())
            notify_conflict_sighting(conflict=locked)
            ended += 1
    return ended


def conflict_sighting_wake(*, conflict: Conflict) -> bool:
    """Called by detection after counting a sighting (row locked): a snooze by sightings that is now
    reached ends here, with its activity row. Returns whether it woke."""
    if conflict.snoozed_until_seen is None or conflict.times_seen < conflict.snoozed_until_seen:
        return False
    conflict.snoozed_until_seen = None
    conflict.snoozed_until = None
    conflict.save(update_fields=["snoozed_until", "snoozed_until_seen"])
    conflict_activity_note(conflict=conflict, kind=ActivityKind.UNSNOOZED,
                   note=f"Snooze ended: seen {conflict.times_seen} times.")
    return True


# --- bulk actions: one service call per conflict, each writing its own activity row --------------


def conflicts_bulk(*, conflicts: list[Conflict], action, actor=None) -> tuple[int, list[str]]:
    """Apply `action(conflict)` (a call of one of the services above) to each conflict; returns how
    many succeeded and, for the others, why not (e.g. someone resolved it meanwhile)."""
    done, refused = 0, []
    for conflict in conflicts:
        try:
            action(conflict)
            done += 1
        except (ConflictStateError, StaleVersionError) as exc:
            refused.append(f"#{conflict.pk}: {exc}")
    return done, refused


def _content_date(article: Article) -> dt.date:
    return (article.current_version.updated_at if article.current_version else None) or dt.date.min


def conflict_resolve_by_deleting_older(*, conflict: Conflict, actor=None, note: str) -> Conflict:
    """Resolve by deleting the article with the older content date (the lower id on a tie or when
    unknown); the newer one is kept as right. Refused for a one-article finding (there is no newer side)."""
    if not conflict.is_pair:
        raise ConflictStateError("This finding is about one article: there is no older article to delete.")
    low, high = (
        Article.objects.select_related("current_version").get(pk=pk) for pk in (conflict.article_low_id, conflict.article_high_id)
    )
    older = high if _content_date(high) < _content_date(low) else low
    return conflict_resolve(
        conflict=conflict, actor=actor, note=note or "Resolved by deleting the older article.",
        fixes=[ArticleFix(article_id=older.pk, expected_version_id=older.current_version_id, action="delete")],
    )
