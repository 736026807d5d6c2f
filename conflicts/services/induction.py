"""The Observer in the product: rule induction from staff decisions, queued as an InductionRun (nightly, or
when ops ask) and worked under its lease; the algorithms are agents.macr's."""
from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from agents.configuration import llm_config_for
from agents.llm import LLMError
from agents.macr.calls import CallMeter
from agents.macr.induction import induce_with_llm
from agents.macr.observer import OUTCOME_BOTH, OUTCOME_NEITHER, Decision, induce_rules
from agents.macr.reasoning import FeedbackCase
from agents.macr.rules import ConflictPair, executable_rules
from articles.models import Article, ArticleVersion, KnowledgeBase, VersionReason
from conflicts.models import (
    Conflict,
    ConflictStatus,
    InductionRun,
    InductionStatus,
    ResolutionRule,
    ResolutionSuggestion,
    ReviewWinner,
    RuleKind,
    RuleOrigin,
    RuleStatus,
)
from conflicts.services.suggestions import _article_text, _textual_rule, rule_base_ensure
from kbreview.jobs import enqueue
from kbreview.leases import lease_claim, lease_finish

# Below this many reviewed conflicts a validation split says nothing; the templates stay as they are.
MIN_DECISIONS_FOR_INDUCTION = 10


def rule_induction_enqueue(*, knowledge_base: KnowledgeBase, actor=None) -> InductionRun:
    """Queue a run of the Observer (ops asked for it, or the nightly schedule), sent to a worker after commit."""
    return enqueue(InductionRun(knowledge_base=knowledge_base, requested_by=actor, status=InductionStatus.QUEUED))


def rule_induction_enqueue_all() -> int:
    """One run queued per knowledge base (the nightly schedule)."""
    ids = list(KnowledgeBase.objects.values_list("pk", flat=True))
    for kb_id in ids:
        enqueue(InductionRun(knowledge_base_id=kb_id, status=InductionStatus.QUEUED))
    return len(ids)


def induction_run_work(*, run_id: int) -> InductionRun:
    """Claim a queued run (kbreview.leases) and work it; one finished, or held by another worker, is returned
    unchanged."""
    claim = lease_claim(InductionRun, pk=run_id)
    run = InductionRun.objects.select_related("knowledge_base", "requested_by").get(pk=run_id)
    if claim is None:
        return run
    return rule_induction_run(knowledge_base=run.knowledge_base, actor=run.requested_by, run=run)


def _outcome(conflict: Conflict) -> str:
    if conflict.status == ConflictStatus.DISMISSED or conflict.winner == ReviewWinner.BOTH:
        return OUTCOME_BOTH
    if conflict.winner == ReviewWinner.LOW:
        return conflict.article_low.external_ref
    if conflict.winner == ReviewWinner.HIGH:
        return conflict.article_high.external_ref
    return OUTCOME_NEITHER


def staff_decisions(*, knowledge_base: KnowledgeBase) -> list[Decision]:
    """Reviewed conflicts as demonstrations, judged on the versions the reviewer saw."""
    reviewed = (
        Conflict.objects.filter(
            knowledge_base=knowledge_base,
            status__in=[ConflictStatus.PROCESSED, ConflictStatus.DISMISSED],
            reviewed_version_low__isnull=False,
            reviewed_version_high__isnull=False,
            article_high__isnull=False,  # one-article findings have no side a rule could pick
        )
        .exclude(winner="")
        .select_related("article_low", "article_high")
        .order_by("pk")
    )
    version_ids = [v for c in reviewed for v in (c.reviewed_version_low_id, c.reviewed_version_high_id)]
    versions = ArticleVersion.objects.in_bulk(version_ids)
    decisions = []
    for conflict in reviewed:
        # The reviewer judged the texts before their fix: the version that existed when the conflict was seen.
        low_version = _version_before_review(conflict.article_low, versions[conflict.reviewed_version_low_id], conflict)
        high_version = _version_before_review(conflict.article_high, versions[conflict.reviewed_version_high_id], conflict)
        decisions.append(
            Decision(
                a=_article_text(conflict.article_low, low_version),
                b=_article_text(conflict.article_high, high_version),
                type=conflict.type,
                outcome=_outcome(conflict),
                decided_on=timezone.localdate(conflict.reviewed_at) if conflict.reviewed_at else timezone.localdate(),
                key=str(conflict.pk),
                snippets={
                    conflict.article_low.external_ref: conflict.snippet_low,
                    conflict.article_high.external_ref: conflict.snippet_high,
                },
            )
        )
    return decisions


def _version_before_review(article: Article, reviewed: ArticleVersion, conflict: Conflict) -> ArticleVersion:
    """A fix written while resolving is the reviewer's answer, not the case they judged: use the one before."""
    if reviewed.reason == VersionReason.RESOLVE and reviewed.number > 1:
        return article.versions.filter(number__lt=reviewed.number).order_by("-number").first() or reviewed
    return reviewed


def feedback_cases(*, knowledge_base: KnowledgeBase) -> list[FeedbackCase]:
    """Conflicts the rules did not cover, with the LLM's provisional judgment: folded into the next induction."""
    cases = []
    for suggestion in ResolutionSuggestion.objects.filter(
        conflict__knowledge_base=knowledge_base, provisional=True, version_low__isnull=False, version_high__isnull=False
    ).select_related("conflict__article_low", "conflict__article_high", "version_low", "version_high"):
        conflict, fb = suggestion.conflict, suggestion.feedback
        cases.append(
            FeedbackCase(
                pair=ConflictPair(
                    a=_article_text(conflict.article_low, suggestion.version_low),
                    b=_article_text(conflict.article_high, suggestion.version_high),
                    type=conflict.type,
                ),
                now=timezone.localdate(suggestion.computed_at),
                question=fb.get("question", ""),
                provisional_winner=fb.get("provisional_winner"),
                reasoning=fb.get("reasoning", ""),
                principle_condition=fb.get("principle_condition", ""),
                principle_resolution=fb.get("principle_resolution", ""),
            )
        )
    return cases


def rule_induction_run(*, knowledge_base: KnowledgeBase, actor=None, run: InductionRun | None = None) -> InductionRun:
    """The Observer: validate candidate rules on held-out staff decisions and keep those that pass.

    Candidates are the executable templates and the knowledge base's textual rules, plus, when an LLM
    is configured, rules it proposes from the training decisions and the feedback cases.
    """
    rule_base_ensure(knowledge_base=knowledge_base)
    if run is None:  # run here and now (the demo replay, tests): its row is written as it starts
        run = InductionRun.objects.create(knowledge_base=knowledge_base, requested_by=actor)
    decisions = staff_decisions(knowledge_base=knowledge_base)
    run.decisions = len(decisions)
    if len(decisions) < MIN_DECISIONS_FOR_INDUCTION:
        return _induction_finish(run, status=InductionStatus.SKIPPED, reason=(
            f"{len(decisions)} reviewed conflicts; at least {MIN_DECISIONS_FOR_INDUCTION} are needed "
            "before rules are validated (the rule base stays as it is)"
        ))
    config = llm_config_for("suggestions")
    textual_rows = ResolutionRule.objects.filter(knowledge_base=knowledge_base, kind=RuleKind.TEXTUAL)
    candidates = executable_rules() + ([_textual_rule(row) for row in textual_rows] if config else [])
    thresholds = {"min_coverage": settings.MACR_MIN_COVERAGE, "min_support": settings.MACR_MIN_SUPPORT}
    try:
        if config is not None:
            meter = CallMeter()
            result = induce_with_llm(decisions=decisions, candidates=candidates, config=config,
                                     feedback=feedback_cases(knowledge_base=knowledge_base), meter=meter, **thresholds)
            run.llm_calls = meter.calls
        else:
            result = induce_rules(decisions=decisions, candidates=candidates, **thresholds)
    except LLMError as exc:
        return _induction_finish(run, status=InductionStatus.FAILED, reason=f"LLM {exc}; the rule base is unchanged")
    with transaction.atomic():
        version = (
            ResolutionRule.objects.filter(knowledge_base=knowledge_base).aggregate(v=Max("rule_base_version"))["v"] or 0
        ) + 1
        for rule, validation in zip(result.candidates, result.validations):
            validated_on = [{"conflict": int(key), "agreed": True} for key in validation.agreed_keys if key] + [
                {"conflict": int(key), "agreed": False} for key in validation.disagreed_keys if key
            ]
            counts = {
                "validated_cases": validation.covered, "validated_agreed": validation.supported,
                "validated_by_standing": validation.by_standing, "validated_on": validated_on,
            }
            updated = ResolutionRule.objects.filter(knowledge_base=knowledge_base, rule_id=validation.rule_id).update(
                **counts,
                coverage=validation.coverage,
                support=validation.support,
                status=RuleStatus.ACTIVE if validation.accepted else RuleStatus.RETIRED,
                rule_base_version=version,
            )
            if not updated:
                # A rule the LLM proposed in this run: kept as active or as a rejected candidate, with figures.
                ResolutionRule.objects.create(
                    knowledge_base=knowledge_base, rule_id=rule.id, type=rule.type, condition=rule.condition,
                    resolution=rule.resolution, origin=RuleOrigin.INDUCED, kind=RuleKind.TEXTUAL,
                    status=RuleStatus.ACTIVE if validation.accepted else RuleStatus.CANDIDATE,
                    priority=rule.priority, coverage=validation.coverage, support=validation.support,
                    rule_base_version=version, **counts,
                )
        run.training, run.validation = len(result.training), len(result.validation)
        run.candidates = len(result.validations)
        run.accepted = len(result.active_rules)
        run.rule_base_version = version
        run.figures = [
            {"id": v.rule_id, "coverage": v.coverage, "support": v.support, "covered": v.covered,
             "agreed": v.supported, "held_out_only": v.held_out_only,
             "cases": v.cases, "accepted": v.accepted, "skipped": v.skipped_reason}
            for v in result.validations
        ]
        return _induction_finish(run, status=InductionStatus.DONE)


def _induction_finish(run: InductionRun, *, status: str, reason: str = "") -> InductionRun:
    run.status, run.reason, run.finished_at = status, reason, timezone.now()
    if run.claimed_at is None:  # a run made here and now holds no lease
        run.save()
        return run
    values = {f.attname: getattr(run, f.attname) for f in InductionRun._meta.concrete_fields if not f.primary_key}
    lease_finish(run, **values)  # a worker that outlived its claim writes nothing
    return run


