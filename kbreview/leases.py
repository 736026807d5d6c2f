"""The one lease every job row is worked under (detection runs, suggestion jobs, index re-syncs, source syncs,
rule inductions, notification deliveries).

A worker takes a row with one conditional UPDATE (`lease_claim`): the row must be waiting, or held by a claim
whose last heartbeat is older than the row type's time to live (its worker died). The claim's moment is its
token: heartbeats, the finish and a release are conditional on it, so a worker that outlived its claim writes
nothing (`lease_finish` returns False). Attempts are counted by the claim; the sweeper (kbreview.jobs) sends a
row that waits or whose lease expired again, or fails it once it has used its attempts.

Each model says, in a few class attributes, which of its fields is its state and which values mean waiting,
held and failed; the fields of the lease itself come from the `Leased` mixin.
"""
from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

REASON_MAX_CHARS = 2000  # a failure's reason, as kept on the row


class Leased(models.Model):
    """A job row worked under a lease: claimed at (the claim's token), last heartbeat, attempts."""

    claimed_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)

    # The row's state field and its values: waiting for a worker, held by one (may be the waiting value
    # when the state does not change while held, as a detection run's), given up.
    lease_state_field = "status"
    lease_waiting = "queued"
    lease_held = "running"
    lease_failed = "failed"
    # The field a waiting row has waited since (the sweeper re-sends it a sweep interval later).
    lease_waiting_since = "created_at"
    # Where a failed row says why and when it was given up (None: the row keeps no such field).
    lease_reason_field: str | None = "error"
    lease_finished_field: str | None = "finished_at"

    class Meta:
        abstract = True

    @classmethod
    def lease_ttl_s(cls) -> float:
        """A held row whose last heartbeat is older than this belongs to a dead worker. Default: Celery kills
        any task that runs past its hard time limit, so a heartbeat older than that is nobody's."""
        return settings.CELERY_TASK_TIME_LIMIT

    @classmethod
    def lease_max_attempts(cls) -> int:
        """Claims a row may have; the sweeper fails a row whose lease expired on the last of them."""
        return 5

    @classmethod
    def lease_due(cls, now: dt.datetime) -> Q:
        """What else a waiting row needs to be claimed now (a delivery: its next attempt is due)."""
        return Q()

    @classmethod
    def lease_on_claim(cls, now: dt.datetime) -> dict:
        """Other fields the claim writes (a re-sync restarts its progress)."""
        return {}

    def lease_give_up(self, reason: str) -> dict:
        """The fields written when the row is failed for good (reason: why): its failed state, why (in
        lease_reason_field) and when (in lease_finished_field), where the row keeps them."""
        fields = {self.lease_state_field: self.lease_failed}
        if self.lease_reason_field:
            fields[self.lease_reason_field] = reason[:REASON_MAX_CHARS]
        if self.lease_finished_field:
            fields[self.lease_finished_field] = timezone.now()
        return fields

    @classmethod
    def lease_states(cls) -> tuple[str, ...]:
        return tuple(dict.fromkeys((cls.lease_waiting, cls.lease_held)))


def lease_expiry(model: type[Leased], now: dt.datetime | None = None) -> dt.datetime:
    """A heartbeat before this moment is a dead worker's."""
    return (now or timezone.now()) - dt.timedelta(seconds=model.lease_ttl_s())


def lease_claimable(model: type[Leased], now: dt.datetime | None = None) -> Q:
    """Rows a worker may take now: waiting and unclaimed (and due), or held under an expired lease."""
    now = now or timezone.now()
    state = model.lease_state_field
    waiting = Q(**{state: model.lease_waiting, "claimed_at__isnull": True})
    return (waiting | (Q(**{f"{state}__in": model.lease_states()}) & _expired(model, now))) & model.lease_due(now)


def _expired(model: type[Leased], now: dt.datetime | None = None) -> Q:
    """Held, with no heartbeat since the expiry (a row claimed before heartbeats were kept: no claim since)."""
    expiry = lease_expiry(model, now)
    return Q(claimed_at__isnull=False) & (Q(heartbeat_at__lt=expiry) | Q(heartbeat_at__isnull=True, claimed_at__lt=expiry))


def lease_claim_values(model: type[Leased], now: dt.datetime) -> dict:
    """What a claim writes (for a caller that claims several rows in one UPDATE of its own)."""
    return {model.lease_state_field: model.lease_held, "claimed_at": now, "heartbeat_at": now,
            "attempts": F("attempts") + 1, **model.lease_on_claim(now)}


def lease_claim(model: type[Leased], **lookup) -> dt.datetime | None:
    """Take the row `lookup` names with one conditional UPDATE; the claim's moment (its token), or None when
    the row is finished, not due, or held by a live worker."""
    now = timezone.now()
    taken = model.objects.filter(**lookup).filter(lease_claimable(model, now)).update(**lease_claim_values(model, now))
    return now if taken else None


def _held(row: Leased):
    return type(row).objects.filter(pk=row.pk, claimed_at=row.claimed_at,
                                    **{row.lease_state_field: row.lease_held})


def lease_heartbeat(row: Leased, **fields) -> bool:
    """Say the worker is alive (and write `fields`, e.g. progress); False once the claim is lost."""
    return bool(_held(row).update(heartbeat_at=timezone.now(), **fields))


def lease_finish(row: Leased, **fields) -> bool:
    """Write the row's end (its state among `fields`) while our claim stands; False (nothing written) when
    it was lost. Inside a transaction the row stays locked until commit, so this goes first."""
    return bool(_held(row).update(**fields))


def lease_release(row: Leased, *, handed_over: bool = False, **fields) -> bool:
    """Give the row back to waiting (a retry, or the sweeper, takes it at once rather than after the lease
    expires). `handed_over`: not an attempt (the work went to another message), so it is not counted."""
    values = {row.lease_state_field: row.lease_waiting, "claimed_at": None, **fields}
    if handed_over:
        values["attempts"] = F("attempts") - 1
    return bool(_held(row).update(**values))


def lease_fail(row: Leased, reason: str) -> bool:
    """Fail the row for good under our claim."""
    return lease_finish(row, **row.lease_give_up(reason))


def leases_stale(model: type[Leased], *, waited_before: dt.datetime) -> Q:
    """Rows the sweeper sends again: waiting unclaimed since before `waited_before` (their message was lost,
    or the broker was down), or held under an expired lease."""
    now = timezone.now()
    state = model.lease_state_field
    waiting = Q(**{state: model.lease_waiting, "claimed_at__isnull": True,
                   f"{model.lease_waiting_since}__lt": waited_before})
    return waiting | (Q(**{f"{state}__in": model.lease_states()}) & _expired(model, now))


def leases_exhausted(model: type[Leased]) -> Q:
    """Held rows whose lease expired on their last allowed attempt: the sweeper fails them."""
    state = model.lease_state_field
    return Q(**{f"{state}__in": model.lease_states(), "attempts__gte": model.lease_max_attempts()}) & _expired(model)
