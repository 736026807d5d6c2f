"""The rules page: the rule rows with the decisions each was validated on, and the induction runs."""
from __future__ import annotations

from articles.models import KnowledgeBase
from conflicts.models import (
    Conflict,
    InductionRun,
    ResolutionRule,
)


def rule_list(*, knowledge_base: KnowledgeBase) -> list:
    """The rule rows, each with `validated_decisions` (the conflicts it was last validated on, in this knowledge
    base, with whether the rule agreed) and `counter_examples` (those it did not)."""
    rules = list(ResolutionRule.objects.filter(knowledge_base=knowledge_base).order_by("status", "priority", "rule_id"))
    ids = {item["conflict"] for rule in rules for item in rule.validated_on if isinstance(item, dict) and "conflict" in item}
    conflicts = Conflict.objects.filter(knowledge_base=knowledge_base, pk__in=ids).select_related(
        "article_low", "article_high"
    ).in_bulk()
    for rule in rules:
        rule.validated_decisions = [
            {"conflict": conflicts[item["conflict"]], "agreed": bool(item.get("agreed"))}
            for item in rule.validated_on
            if isinstance(item, dict) and item.get("conflict") in conflicts
        ]
        rule.counter_examples = [item for item in rule.validated_decisions if not item["agreed"]]
    return rules


def induction_runs(*, knowledge_base: KnowledgeBase, limit: int = 20) -> list:
    return list(InductionRun.objects.filter(knowledge_base=knowledge_base).select_related("requested_by")[:limit])
