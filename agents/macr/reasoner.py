"""MACR Reasoner over plain data: apply the active rules to one conflict and say which side is right.

Decision procedure (why: a wrong suggestion costs a reviewer more than no suggestion):
1. Consider the rules of this conflict's type (or of every type) whose Condition holds and whose
   Resolution names a winner; textual rules are skipped unless a `textual_judge` is given.
2. Walk priority levels from the most specific (lowest number) down; the first level with any
   verdict decides. Lower levels that disagree are overridden (and named in the explanation): a
   specific rule such as "an official document in force beats a newer undated copy" exists exactly
   to overrule the general "newer wins".
3. Rules at the deciding level that disagree → abstain (winner None). No verdict at all → abstain.

Confidence is the mean validated Support of the rules that decided (0.5 for a rule never validated:
no evidence either way); 0.0 when abstaining.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from itertools import groupby

from agents.macr.rules import ConflictPair, Rule
from agents.types import ArticleText, Suggestion

UNVALIDATED_SUPPORT = 0.5

TextualJudge = Callable[[Rule, ConflictPair, dt.date], "str | None"]


def suggest(
    *,
    a: ArticleText,
    b: ArticleText,
    conflict_type: str,
    now: dt.date,
    rules: Sequence[Rule],
    snippets: Mapping[str, str] | None = None,
    textual_judge: TextualJudge | None = None,
) -> Suggestion:
    pair = ConflictPair(a=a, b=b, type=conflict_type, snippets=dict(snippets or {}))
    verdicts = _verdicts(pair=pair, now=now, rules=rules, textual_judge=textual_judge)
    if not verdicts:
        return Suggestion(
            refs=pair.refs,
            winner=None,
            explanation="Cannot tell: no active rule applies to this pair.",
            rules=(),
            confidence=0.0,
        )

    ordered = sorted(verdicts, key=lambda verdict: verdict[0].priority)
    levels = [list(group) for _, group in groupby(ordered, key=lambda verdict: verdict[0].priority)]
    deciding, lower = levels[0], [verdict for level in levels[1:] for verdict in level]
    winners = {winner for _, winner in deciding}
    used_ids = tuple(rule.id for rule, _ in deciding)

    if len(winners) > 1:
        reasons = "; ".join(
            f"{rule.id} picks {winner} ({rule.because(pair, now)})" for rule, winner in deciding
        )
        return Suggestion(
            refs=pair.refs,
            winner=None,
            explanation=f"Cannot tell: rules of equal priority disagree: {reasons}.",
            rules=used_ids,
            confidence=0.0,
        )

    winner = winners.pop()
    loser = pair.b if winner == pair.a.ref else pair.a
    lines = [f"{winner} is more likely right than {loser.ref}."]
    lines += [f"Rule {rule.id}: {rule.because(pair, now)}." for rule, _ in deciding]
    agreeing = [rule.id for rule, picked in lower if picked == winner]
    overridden = [f"{rule.id} (would pick {picked})" for rule, picked in lower if picked != winner]
    if agreeing:
        lines.append("Also consistent with: " + ", ".join(agreeing) + ".")
    if overridden:
        lines.append("Overridden by the more specific rule above: " + ", ".join(overridden) + ".")
    edit = proposed_edit(loser=loser, winner_ref=winner, snippets=pair.snippets)
    if edit is None:
        lines.append(f"No edit proposed: the conflicting sentences are not known; edit {loser.ref} by hand.")
    return Suggestion(
        refs=pair.refs,
        winner=winner,
        explanation=" ".join(lines),
        rules=used_ids,
        confidence=_confidence([rule for rule, _ in deciding]),
        proposed_edit=edit,
    )


def proposed_edit(*, loser: ArticleText, winner_ref: str, snippets: Mapping[str, str]) -> str | None:
    """The losing article's body with its conflicting sentence replaced by the winner's.

    Only when both snippets are known and the loser's occurs verbatim once in its body: anything
    cleverer would be a guess the reviewer has to undo. The reviewer still confirms in the editor.
    """
    losing_snippet = (snippets.get(loser.ref) or "").strip()
    winning_snippet = (snippets.get(winner_ref) or "").strip()
    if not losing_snippet or not winning_snippet or loser.body.count(losing_snippet) != 1:
        return None
    return loser.body.replace(losing_snippet, winning_snippet)


def _verdicts(
    *, pair: ConflictPair, now: dt.date, rules: Sequence[Rule], textual_judge: TextualJudge | None
) -> list[tuple[Rule, str]]:
    verdicts = []
    for rule in rules:
        if not rule.matches_type(pair.type):
            continue
        if rule.is_executable:
            winner = rule.resolve(pair, now)
        elif textual_judge is not None:
            winner = textual_judge(rule, pair, now)
        else:
            continue
        if winner in pair.refs:
            verdicts.append((rule, winner))
    return verdicts


def _confidence(rules: Sequence[Rule]) -> float:
    supports = [rule.support if rule.support is not None else UNVALIDATED_SUPPORT for rule in rules]
    return round(sum(supports) / len(supports), 4)
