"""The built-in answer path: retrieve, rerank, answer — with conflict detection running beside it.

With IGD_BACKEND set, the reply comes from Intent-Guided Decoding in the request's mode (else the knowledge
base's default, STRICT unless set); any IGD failure (timeout, a server without log-probabilities) falls back to
the plain answer, which is the LLM's when one is configured and an extractive quote otherwise. When IGD's
answer-level filter routes to memory against a retrieved article, the knowledge base may record it on that article
(conflicts.services.disagreements; off by default); recording never changes or fails the reply.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import uuid
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agents.answer import EXTRACTIVE_ARTICLES, GeneratedAnswer, Passage, extractive_answer, generate_answer
from agents.configuration import llm_config_for
from agents.igd.arithmetic import Mode
from agents.igd.decoding import Backend
from agents.igd.local import LocalBackend
from agents.igd.local_model import load_local_model
from agents.igd.openai_backend import OpenAIBackend
from agents.igd.pipeline import ANSWER_PARAMS, IGDAnswer, igd_answer
from agents.llm import LLMError
from articles.audit import audit_event_record
from articles.embeddings import embed_texts
from articles.models import ArticleVersion, AuditAction, KnowledgeBase
from articles.selectors import SearchHit, search
from conflicts.models import AnswerMode, AnswerPolicy, AnswerSettings, Turn, TurnSource
from conflicts.services.disagreements import model_disagreement_record
from conflicts.services.policy import (
    ConflictCheck,
    caveat_problem,
    conflict_check,
    policy_decision_rows,
    reply_with_caveat,
    unknown_check,
)
from conflicts.services.turns import RetrievedRef, turn_reply_record, turn_report
from kbreview.foreground import foreground_work

logger = logging.getLogger(__name__)


@dataclass
class ComposedAnswer:
    """What the answer path decided, before anything is recorded (the playground shows it as is)."""

    mode: str
    hits: list[SearchHit]
    passages: list[Passage]
    answer: GeneratedAnswer
    igd: IGDAnswer | None = None
    answer_error: str = ""


@dataclass
class AnswerResponse:
    turn: Turn
    reply: str
    citations: list[str]
    hits: list[SearchHit] = field(default_factory=list)
    answer_error: str = ""
    mode: str = AnswerMode.STRICT
    igd: IGDAnswer | None = None
    check: ConflictCheck = field(default_factory=unknown_check)
    held_back: list[str] = field(default_factory=list)  # refs left out of the answer's context by the policy
    caveat_added: bool = False


def rerank(hits: list[SearchHit]) -> list[SearchHit]:
    """Order by embedding similarity of the best chunk to the question (fusion decides what is retrieved,
    similarity what the answer reads first). Kept apart from detection, which sees every retrieved article."""
    return sorted(hits, key=lambda h: (-(h.similarity or 0.0), -h.score))


def answer_default_mode(*, knowledge_base: KnowledgeBase) -> str:
    row = AnswerSettings.objects.filter(knowledge_base=knowledge_base).values_list("default_mode", flat=True).first()
    return row or AnswerMode.STRICT


def answer_settings_update(
    *, knowledge_base: KnowledgeBase, default_mode: str | None = None, record_model_disagreements: bool | None = None,
    policy: str | None = None, caveat_text: str | None = None, prefer_threshold: float | None = None, user=None,
) -> AnswerSettings:
    """Set the knowledge base's answer settings — default mode, whether it records model-disagreement findings, the
    answer policy for open conflicts, its caveat sentence and its suggestion threshold (None: left as it is); the row
    records who changed it and when, and a change writes the audit row (before / after). A value that cannot be used
    raises ValueError naming the field, and nothing is written."""
    if default_mode is not None and default_mode not in AnswerMode.values:
        raise ValueError(f"default_mode {default_mode!r} is not one of {AnswerMode.values}")
    if policy is not None and policy not in AnswerPolicy.values:
        raise ValueError(f"policy {policy!r} is not one of {AnswerPolicy.values}")
    if caveat_text is not None and (problem := caveat_problem(caveat_text)):
        raise ValueError(f"caveat_text: {problem}")
    if prefer_threshold is not None and not (0.0 <= float(prefer_threshold) <= 1.0):  # NaN fails too
        raise ValueError(f"prefer_threshold {prefer_threshold!r} is not between 0 and 1")
    changes = {"default_mode": default_mode, "record_model_disagreements": record_model_disagreements, "policy": policy,
               "caveat_text": caveat_text.strip() if caveat_text is not None else None,
               "prefer_threshold": float(prefer_threshold) if prefer_threshold is not None else None}
    names = list(changes)
    with transaction.atomic():
        row, _ = AnswerSettings.objects.select_for_update().get_or_create(knowledge_base=knowledge_base)
        before = {name: getattr(row, name) for name in names}
        for name, value in changes.items():
            if value is not None:
                setattr(row, name, value)
        row.updated_by = user if getattr(user, "is_authenticated", False) else None
        row.save()
        after = {name: getattr(row, name) for name in names}
        changed = [name for name in names if after[name] != before[name]]
        if changed:  # the audit row names what changed, before and after
            audit_event_record(action=AuditAction.ANSWER_SETTINGS_CHANGED, target=row, knowledge_base=knowledge_base,
                               actor=user, before={n: before[n] for n in changed}, after={n: after[n] for n in changed})
    logger.info("answer settings: %s -> %s", knowledge_base.slug, after)
    return row


def answer_settings_get(*, knowledge_base: KnowledgeBase) -> AnswerSettings:
    """The knowledge base's answer settings, or an unsaved row of the defaults."""
    return AnswerSettings.objects.filter(knowledge_base=knowledge_base).first() or AnswerSettings(knowledge_base=knowledge_base)


def igd_backend(kind: str | None = None) -> Backend | None:
    """The configured IGD backend (None when IGD_BACKEND=off); the local model is loaded once per process."""
    kind = kind or settings.IGD_BACKEND
    if kind == "local":

        return LocalBackend(load_local_model(path=settings.LOCAL_LM_PATH, cache_dir=settings.LOCAL_LM_CACHE_DIR))
    if kind == "openai":

        config = llm_config_for("answer")
        if config is None:
            raise LLMError("not_configured", "IGD_BACKEND=openai needs OPENAI_BASE_URL (or ANSWER_LLM_BASE_URL)")
        return OpenAIBackend(config)
    return None


def answer_passages(hits: list[SearchHit]) -> list[Passage]:
    """The best chunk of each hit; the top articles' whole text too, for the extractive answer and IGD's snippet."""
    bodies = dict(
        ArticleVersion.objects.filter(pk__in=[h.version_id for h in hits[:EXTRACTIVE_ARTICLES]]).values_list("pk", "body")
    )
    return [Passage(ref=h.external_ref, title=h.title, text=h.chunk_text, body=bodies.get(h.version_id, "")) for h in hits]


def _plain_answer(*, question: str, passages: list[Passage]) -> tuple[GeneratedAnswer, str]:
    config = llm_config_for("answer")
    try:
        with _computed_here(config is None):  # without an LLM: the extractive answer
            return generate_answer(question=question, passages=passages, config=config, embed=embed_texts), ""
    except LLMError as exc:
        # The customer still gets the best sentences rather than an error.
        with _computed_here(True):
            return extractive_answer(question=question, passages=passages, embed=embed_texts), f"LLM {exc}; answered extractively"


def _computed_here(here: bool):
    """An answer this process computes (sentence vectors, the local model) is foreground work, which background
    work on this machine waits for; waiting for a server is not."""
    return foreground_work() if here else contextlib.nullcontext()


def _runs_here(backend: Backend) -> bool:

    return isinstance(backend, LocalBackend)


def answer_compose(
    *, knowledge_base: KnowledgeBase, question: str, mode: str | None = None, backend: Backend | None = None,
    hits: list[SearchHit] | None = None,
) -> ComposedAnswer:
    """Retrieval and the reply, nothing written: the answer path and the playground share it."""
    mode = mode or answer_default_mode(knowledge_base=knowledge_base)
    if hits is None:
        hits = rerank(search(knowledge_base=knowledge_base, question=question))
    passages = answer_passages(hits)
    if passages:
        try:
            backend = backend or igd_backend()
            if backend is not None:
                params = dataclasses.replace(ANSWER_PARAMS, max_new_tokens=settings.IGD_MAX_NEW_TOKENS)
                with _computed_here(_runs_here(backend)):
                    igd = igd_answer(question=question, passages=passages, mode=Mode(mode), backend=backend, params=params,
                                     embed=embed_texts)
                return ComposedAnswer(mode=mode, hits=hits, passages=passages, answer=igd.answer, igd=igd)
        except LLMError as exc:
            answer, error = _plain_answer(question=question, passages=passages)
            return ComposedAnswer(
                mode=mode, hits=hits, passages=passages, answer=answer,
                answer_error=f"IGD {exc}; plain answer instead" + (f"; {error}" if error else ""),
            )
    answer, error = _plain_answer(question=question, passages=passages)
    return ComposedAnswer(mode=mode, hits=hits, passages=passages, answer=answer, answer_error=error)


def answer_question(
    *, knowledge_base: KnowledgeBase, question: str, external_id: str | None = None, mode: str | None = None
) -> AnswerResponse:
    hits = rerank(search(knowledge_base=knowledge_base, question=question))
    # The open conflicts among what was retrieved, and the policy (one look-up; "unknown" on failure: as "off").
    check = conflict_check(knowledge_base=knowledge_base, refs=[h.external_ref for h in hits])
    # Recording the turn commits before generation starts, so detection runs in parallel with the wait for
    # the answer; the reply's own work here is foreground, which background tasks wait for (kbreview/foreground.py).
    # Every retrieved article is recorded (detection still sees a side held back), the answer reads the others.
    with foreground_work():
        turn, _ = turn_report(
            knowledge_base=knowledge_base,
            external_id=external_id or f"answer-{uuid.uuid4().hex}",
            question=question,
            retrieved=[RetrievedRef(ref=h.external_ref, rank=i) for i, h in enumerate(hits, 1)],
            source=TurnSource.ANSWER,
            answer_policy=check.policy or "",
            conflict_check=check.status,
        )
    composed = answer_compose(knowledge_base=knowledge_base, question=question, mode=mode or check.default_mode,
                              hits=_policy_hits(hits, check))
    citations = composed.answer.citations
    reply, caveat_added = _policy_reply(composed, check)
    with foreground_work():
        # What the policy did (a side held back, the caveat added) is written in the reply's own transaction.
        decisions = policy_decision_rows(knowledge_base_id=turn.knowledge_base_id, turn=turn, check=check,
                                         cited=citations, caveat_added=caveat_added)
        turn = turn_reply_record(turn=turn, reply=reply, sent_at=timezone.now(), policy_decisions=decisions)
        if composed.igd is not None and (disagreement := composed.igd.disagreement) is not None:
            _disagreement_record(turn=turn, disagreement=disagreement)
    return AnswerResponse(
        turn=turn, reply=reply, citations=citations, hits=hits,
        answer_error=composed.answer_error, mode=composed.mode, igd=composed.igd,
        check=check, held_back=sorted(set(check.held_back)), caveat_added=caveat_added,
    )


def _policy_hits(hits: list[SearchHit], check: ConflictCheck) -> list[SearchHit]:
    """What the answer reads: the retrieved articles less those the policy holds back."""
    held_back = set(check.held_back)
    return [h for h in hits if h.external_ref not in held_back] if held_back else hits


def _policy_reply(composed: ComposedAnswer, check: ConflictCheck) -> tuple[str, bool]:
    """The reply with the policy's caveat when it cites an article in an open conflict; whether it was added."""
    if check.caveat_due(composed.answer.citations):
        return reply_with_caveat(reply=composed.answer.reply, caveat=check.caveat), True
    return composed.answer.reply, False


@dataclass
class TriedAnswer:
    """The reply the answer path would give under the knowledge base's answer policy, nothing recorded."""

    composed: ComposedAnswer  # its passages are what the answer read: a side held back is not among them
    check: ConflictCheck
    reply: str
    caveat_added: bool


def answer_try(*, knowledge_base: KnowledgeBase, question: str, mode: str | None = None,
               backend: Backend | None = None) -> TriedAnswer:
    """answer_question's retrieval, open-conflict look-up, policy and reply, without recording a turn (the
    playground: reviewers see what a customer would be told, held-back side and caveat included)."""
    hits = rerank(search(knowledge_base=knowledge_base, question=question))
    check = conflict_check(knowledge_base=knowledge_base, refs=[h.external_ref for h in hits])
    composed = answer_compose(knowledge_base=knowledge_base, question=question, mode=mode or check.default_mode,
                              backend=backend, hits=_policy_hits(hits, check))
    reply, caveat_added = _policy_reply(composed, check)
    return TriedAnswer(composed=composed, check=check, reply=reply, caveat_added=caveat_added)


def _disagreement_record(*, turn: Turn, disagreement) -> None:
    """Record the model's disagreement after the reply is recorded; a failure is logged, never the customer's."""
    try:
        with transaction.atomic():
            model_disagreement_record(turn=turn, disagreement=disagreement)
    except Exception:  # fail open, as detection does: the reply has been recorded and goes out unchanged
        logger.exception("turn %s: recording the model's disagreement with %s failed", turn.pk, disagreement.ref)
