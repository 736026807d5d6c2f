"""A turn's check under the generic lease (kbreview.leases): claimed with one conditional UPDATE, written once
under the claim, given back when a batch takes it over or the worker fails."""
from __future__ import annotations

import datetime as dt

from django.db import transaction
from django.utils import timezone

from conflicts.models import DetectionRun
from kbreview.leases import lease_claim, lease_finish, lease_release


class ClaimLost(Exception):
    """Another worker finished or took over this check (ours outlived its claim): write nothing."""


def run_claim(*, turn_id: int) -> dt.datetime | None:
    """Take the turn's queued check; None if it is finished or another worker holds it."""
    return lease_claim(DetectionRun, turn_id=turn_id)


def run_release(run: DetectionRun, *, handed_over: bool = False, **fields) -> bool:
    """Give the check back (a retry, the sweeper or a batch's wake-up takes it); `handed_over`: to a batch,
    which counts the attempt itself."""
    return lease_release(run, handed_over=handed_over, **fields)


def run_finish(run: DetectionRun, *, outcome: str, reason: str = "", **fields) -> DetectionRun:
    with transaction.atomic():
        return run_save_outcome(run, outcome=outcome, reason=reason, **fields)


def run_save_outcome(run: DetectionRun, *, outcome: str, reason: str, **fields) -> DetectionRun:
    """Write the outcome, provided our claim still stands (else ClaimLost, and the caller's transaction rolls
    back): one conditional UPDATE that also locks the run until commit, so it goes first, before anything
    else the check records, and what a turn's check records is written once."""
    run.outcome = outcome
    run.reason = reason[:2000]
    run.finished_at = timezone.now()
    # From the turn being recorded to the verdict: time spent waiting for a worker counts too.
    run.latency_ms = int((run.finished_at - run.created_at).total_seconds() * 1000)
    for name, value in fields.items():
        setattr(run, name, value)
    values = {f.attname: getattr(run, f.attname) for f in DetectionRun._meta.concrete_fields if not f.primary_key}
    if not lease_finish(run, **values):
        raise ClaimLost(f"turn {run.turn_id}")
    return run
