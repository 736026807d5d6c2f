"""MACR Reasoner over plain data: apply the active rules to one conflict and say which side is right.

Decision procedure (why: a wrong suggestion costs a reviewer more than no suggestion):
1. Consider the rules of this conflict's type (or of every type) whose Condition holds and whose
   Resolution names a winner; textual rules are skipped unless a `textual_judge` is given.
2. Walk priority levels from the most specific (lowest number) down; the first level with any
   verdict decides. Lower levels that disagree are overridden (and named in the explanation): a
   specific rule such as "an official document in force beats a newer undated copy" exists exactly
   to overrule the general "newer wins".
3. Rules at the deciding level that disagree → abstain (winner None). No verdict at all → abstain,
   saying why in the reviewer's words (both pages dated the same day; no rule covers a terms page
   against a web page).
4. Confidence is calibrated (calibration.py): the deciding rules' validated support on the knowledge
   base's own decisions combined with, for the built-in rules, their measured accuracy on the dev half
   in this situation. Below `min_confidence` the suggestion is "cannot tell", naming the side the rules
   lean to and why that is not enough; 0.0 when abstaining.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from itertools import groupby

from agents.macr.calibration import Priors, rule_confidence
from agents.macr.rules import (
    MIN_DATE_GAP_DAYS,
    ConflictPair,
    Rule,
    explicit_effective_date,
    is_official_document,
    older_side_still_in_its_period,
    possible_careless_copy,
)
from agents.types import ArticleText, Suggestion

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
    statement_dates: Mapping[str, dt.date] | None = None,
    min_confidence: float = 0.0,
    priors: Priors | None = None,
) -> Suggestion:
    pair = ConflictPair(a=a, b=b, type=conflict_type, snippets=dict(snippets or {}),
                        statement_dates=dict(statement_dates or {}))
    verdicts = _verdicts(pair=pair, now=now, rules=rules, textual_judge=textual_judge)
    if not verdicts:
        return Suggestion(
            refs=pair.refs,
            winner=None,
            explanation=f"Cannot tell: {no_rule_reason(pair, now)}.",
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
    confidences = [rule_confidence(rule, pair=pair, winner=winner, priors=priors) for rule, _ in deciding]
    confidence = round(sum(c.raw for c in confidences) / len(confidences), 4)
    evidence = "; ".join(f"{rule.id}: {c.evidence}" for (rule, _), c in zip(deciding, confidences))
    if confidence < min_confidence:
        reasons = " ".join(f"Rule {rule.id}: {rule.because(pair, now)}." for rule, _ in deciding)
        return Suggestion(
            refs=pair.refs,
            winner=None,
            explanation=(f"Cannot tell: the rules lean to {winner}, but only at confidence {confidence:.2f}, below "
                         f"this knowledge base's threshold {min_confidence:.2f} ({evidence}). {reasons}"),
            rules=used_ids,
            confidence=0.0,
            leaning=winner,
            leaning_confidence=confidence,
        )
    lines = [f"{winner} is more likely right than {loser.ref} (confidence {confidence:.2f}: {evidence})."]
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
        confidence=confidence,
        proposed_edit=edit,
    )


def _kind(article: ArticleText) -> str:
    if article.source == "pdf":
        return "an official PDF"
    if is_official_document(article):
        return "a terms or policy page"
    return {"faq": "an FAQ answer", "web": "a web page", "manual": "a help guide"}.get(article.source, "a page")


def _in_force_since(article: ArticleText, now: dt.date) -> str:
    date = explicit_effective_date(article, now)
    return date.isoformat() if date else "an unknown date"


def no_rule_reason(pair: ConflictPair, now: dt.date) -> str:
    """Why no rule could pick a side, in the reviewer's words."""
    date_a, date_b = pair.statement_date(pair.a), pair.statement_date(pair.b)
    if date_a is None or date_b is None:
        missing = ", ".join(article.ref for article, date in ((pair.a, date_a), (pair.b, date_b)) if date is None)
        dates = f"no date is known for {missing}"
    elif date_a == date_b:
        dates = f"both statements are dated {date_a.isoformat()}"
    elif abs((date_a - date_b).days) < MIN_DATE_GAP_DAYS:
        dates = (f"the statements are dated only {abs((date_a - date_b).days)} days apart ({date_a.isoformat()} and "
                 f"{date_b.isoformat()}), too close to say which was meant last")
    elif (official := possible_careless_copy(pair, now)) is not None:
        page = pair.other(official)
        dates = (f"{page.ref} is newer but gives no date of its own and was written soon after {official.ref} "
                 f"(an official document) took effect on {_in_force_since(official, now)}: it may just have missed "
                 f"that change, so its date is no reason, and nothing shows the two statements are about one subject")
    elif (still := older_side_still_in_its_period(pair, now)) is not None:
        older, (start, end) = still
        dates = (f"{older.ref} is older but says it holds from {start.isoformat()} to {end.isoformat()}, a period "
                 f"not over yet, so the newer date of {pair.other(older).ref} does not make it stale")
    else:
        dates = f"the dates ({date_a.isoformat()} and {date_b.isoformat()}) are not a reason on their own here"
    kinds = sorted({_kind(pair.a), _kind(pair.b)})
    standing = (f"no rule covers {kinds[0]} against {kinds[1]}" if len(kinds) == 2
                else f"both are {kinds[0].split(' ', 1)[1]}s, with no authority between them")
    return f"{dates}; {standing}"


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

