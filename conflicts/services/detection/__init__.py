"""Checking a turn's retrieved articles for conflicts, beside the reply and never in its way.

Fail open: a timeout or an error records "no conflicts" with the reason on the turn's DetectionRun; nothing
propagates to whoever is sending the reply. The check, by job:

- leasing.py: the turn's DetectionRun under the generic lease (kbreview.leases): claimed once, written once;
- detector.py: the claim detector of this process (its claim vectors: articles.claim_vectors);
- judging.py: planning the check and judging its pairs, each step bounded by DETECTION_TIMEOUT_S;
- batching.py: gates, so that turns arriving close together share an LLM call;
- recording.py: the outcome, the verdicts and the conflicts found.

A run can be worked by its own message, its gate's wake-up, or another turn's batch (which claims it); the
sweeper (kbreview.jobs) re-sends it when its message was lost or its worker died.
"""
from __future__ import annotations

import logging
import time

from conflicts.models import DetectionRun
from conflicts.services.detection import batching
from conflicts.services.detection.detector import claim_detector_warm_up, claim_texts_of, claim_vectors
from conflicts.services.detection.judging import check_plan, detection_setup, judge
from conflicts.services.detection.leasing import ClaimLost, run_claim, run_release
from conflicts.services.detection.recording import (
    IMPACT_EPOCH,
    IMPACT_HALF_LIFE_S,
    conflict_record,
    conflict_sighting_count,
    conflicts_record,
    detection_verdicts_forget,
    record_all,
)

logger = logging.getLogger(__name__)

__all__ = ["IMPACT_EPOCH", "IMPACT_HALF_LIFE_S", "claim_detector_warm_up", "claim_texts_of", "claim_vectors",
           "conflict_record", "conflict_sighting_count", "conflicts_record", "detection_verdicts_forget", "turn_detect"]


def turn_detect(*, turn_id: int) -> DetectionRun:
    """Check one turn's retrieval set once; a finished run, or one another worker holds, is returned
    unchanged (idempotent: duplicate messages and re-sent work do nothing)."""
    claim = run_claim(turn_id=turn_id)  # before reading the run: what it then reads is what the claim left
    run = DetectionRun.objects.select_related("turn").get(turn_id=turn_id)
    if claim is None:  # finished, or another worker holds it
        return run
    try:
        return _detect_claimed(run)
    except ClaimLost:
        logger.warning("detection of turn %s outlived its claim; the other worker's result stands", turn_id)
        return DetectionRun.objects.get(pk=run.pk)
    except BaseException:
        # Let a retry (or the sweeper) take it again at once rather than after the claim expires.
        # (The run holds the claim: a worker whose wake-up the broker refused took its turn back with a new one.)
        run_release(run)
        raise


def _detect_claimed(run: DetectionRun) -> DetectionRun:
    """Plan the turn's check; when the LLM is to judge pairs, leave the turn to a batch gate (this worker is
    then free) or gather the turns waiting at its own; judge every check gathered; record each."""
    setup = detection_setup()
    deadline = time.monotonic() + setup.timeout_s
    checks = [check_plan(run, setup=setup, deadline=deadline)]
    try:
        if checks[0].plan is not None and checks[0].plan.needs_llm and setup.batching:
            if batching.gate_join(run):
                return run  # the wake-up of a gate open in this knowledge base judges it with its own
            if batching.gate_open(run):
                return DetectionRun.objects.get(pk=run.pk)  # its gate's wake-up judges it with those that join
            company, deadline, waited = batching.gather(run, setup=setup)
            if waited:
                # Verdicts recorded meanwhile (a batch that was in flight when this turn was planned) settle
                # its pairs now: plan it again rather than ask the LLM for them a second time.
                checks[0] = check_plan(run, setup=setup, deadline=deadline)
            checks += company
        judge(checks, setup=setup, deadline=deadline)
        return record_all(checks, setup=setup)
    except BaseException:
        for check in checks[1:]:  # the leader's own claim is released by turn_detect
            run_release(check.run)
        batching.gate_close_interrupted(run)
        raise
