"""Turns, what they retrieved and cited, detection runs, and conflicts with their occurrences.

A conflict's identity is its unordered pair of articles (stored low id first), never their text:
an edit does not make a reviewed pair new again. Occurrences tie it to the replies actually sent.

One kind is about a single article: "the model disagrees with this article" (MODEL_DISAGREES), recorded by the
answer path when IGD's answer-level filter routes to memory against it. It is a Conflict row with article_low
only and the article version it disputes: its identity is that version (a new version is a new finding, since
the edit may have fixed what the model disputed), and it shares the queue, the review actions, the timeline
and the occurrences with pairs.
"""
from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.utils import timezone

from agents.igd.arithmetic import Mode
from agents.types import MAX_ARTICLES_CHECKED, MODEL_DISAGREES, RECORDED_TYPE_LABELS
from articles.models import Article, ArticleVersion, KnowledgeBase, SyncStatus
from kbreview.leases import Leased


class AnswerMode(models.TextChoices):
    """The intent the built-in answer path decodes with (agents.igd.Mode; STRICT: the knowledge base is authoritative)."""

    STRICT = Mode.STRICT.value, Mode.STRICT.label
    TRUTH = Mode.TRUTH.value, Mode.TRUTH.label


class AnswerPolicy(models.TextChoices):
    """What answers do about open conflicts before staff review them (conflicts.services.policy)."""

    OFF = "off", "Off: answer as before"
    CAVEAT = "caveat", "Caveat: add a sentence when the reply cites an article in an open conflict"
    PREFER_SUGGESTED = "prefer_suggested", "Prefer the suggested side: leave the losing article out of that answer"
    QUARANTINE = "quarantine", "Quarantine: the suggested losing article leaves retrieval until staff decide"


CAVEAT_MAX_LENGTH = 240
DEFAULT_CAVEAT = "Some of our pages disagree on this and our team has been told; please check before you rely on it."
# The Observer's bar for a validated rule's support: by default only suggestions backed by validated rules act.
DEFAULT_PREFER_THRESHOLD = 0.6


class ConflictCheckStatus(models.TextChoices):
    """How a turn's look-up of open conflicts among its retrieved refs went (conflicts.services.policy)."""

    NONE = "", "Not looked up (turns from before answer policies)"
    OK = "ok", "Looked up"
    UNKNOWN = "unknown", "The look-up failed; the turn went on as under \"off\""


class TurnSource(models.TextChoices):
    API = "api", "Reported by a chatbot"
    ANSWER = "answer", "Built-in answer path"


class Turn(models.Model):
    """One customer question, what retrieval returned for it, and the reply that was sent."""

    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="turns")
    external_id = models.CharField(max_length=200)
    question = models.TextField()
    reply = models.TextField(blank=True)
    reply_sent_at = models.DateTimeField(null=True, blank=True)
    source = models.CharField(max_length=10, choices=TurnSource.choices, default=TurnSource.API)
    # The knowledge base's answer policy when the turn was reported ("" for turns from before policies), and how
    # the look-up of open conflicts among its retrieved refs went ("unknown": it failed and the turn went on as
    # under "off").
    answer_policy = models.CharField(max_length=20, choices=AnswerPolicy.choices, blank=True, default="")
    conflict_check = models.CharField(max_length=10, choices=ConflictCheckStatus.choices, blank=True,
                                      default=ConflictCheckStatus.NONE)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["knowledge_base", "external_id"], name="turn_external_id_unique_per_kb"),
            models.CheckConstraint(
                condition=models.Q(answer_policy__in=["", *AnswerPolicy.values]), name="turn_answer_policy_valid"
            ),
            models.CheckConstraint(condition=models.Q(conflict_check__in=ConflictCheckStatus.values),
                                   name="turn_conflict_check_valid"),
            models.CheckConstraint(condition=models.Q(source__in=TurnSource.values), name="turn_source_valid"),
        ]
        indexes = [models.Index(fields=["knowledge_base", "-created_at"])]

    def __str__(self) -> str:
        return self.external_id


class ArticleUsage(models.Model):
    """An article in a turn: retrieved (with rank and the version shown) and/or cited by the reply."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="usages")
    article = models.ForeignKey(Article, on_delete=models.CASCADE, related_name="usages")
    version = models.ForeignKey(ArticleVersion, on_delete=models.RESTRICT, related_name="+")
    rank = models.PositiveIntegerField(null=True, blank=True)  # null: cited but not among the retrieved
    cited = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["turn", "article"], name="usage_unique_per_turn")]
        indexes = [models.Index(fields=["article", "cited"])]
        ordering = ["turn", "rank"]


class DetectionOutcome(models.TextChoices):
    QUEUED = "queued", "Queued"
    OK = "ok", "Checked"
    SKIPPED = "skipped", "Skipped: fewer than 2 articles"
    CAPPED = "capped", f"Checked the best {MAX_ARTICLES_CHECKED}"
    TIMEOUT = "timeout", "Timed out (no conflicts recorded)"
    ERROR = "error", "Failed (no conflicts recorded)"


FINISHED_OUTCOMES = (DetectionOutcome.OK, DetectionOutcome.SKIPPED, DetectionOutcome.CAPPED,
                     DetectionOutcome.TIMEOUT, DetectionOutcome.ERROR)


class DetectionRun(Leased):
    """How the check of one turn went. Timeouts and errors record "no conflicts" and why (fail open).

    Its lease holds it without changing its outcome (queued until the verdict is written)."""

    lease_state_field = "outcome"
    lease_waiting = lease_held = "queued"

    turn = models.OneToOneField(Turn, on_delete=models.CASCADE, related_name="detection")
    outcome = models.CharField(max_length=10, choices=DetectionOutcome.choices, default=DetectionOutcome.QUEUED)
    reason = models.TextField(blank=True)
    detector = models.CharField(max_length=20, blank=True)
    articles_checked = models.PositiveIntegerField(default=0)
    pairs_checked = models.PositiveIntegerField(default=0)
    cache_hits = models.PositiveIntegerField(default=0)
    conflicts_found = models.PositiveIntegerField(default=0)
    llm_calls = models.PositiveIntegerField(default=0)
    tokens = models.PositiveIntegerField(default=0)
    model = models.CharField(max_length=200, blank=True)
    dropped_invented_refs = models.PositiveIntegerField(default=0)
    dropped_bad_snippets = models.PositiveIntegerField(default=0)
    # Pairs not sent to the LLM because their articles are about different things, and claim findings the
    # LLM confirmed / did not confirm (auto: a rejected one is dropped).
    unrelated_pairs = models.PositiveIntegerField(default=0)
    known_claim_pairs = models.PositiveIntegerField(default=0)  # pairs whose claim pairs were all judged before
    llm_confirmed = models.PositiveIntegerField(default=0)
    llm_rejected = models.PositiveIntegerField(default=0)
    # Turns whose pairs were judged in the LLM call(s) this turn's pairs went to, this one included (1: a
    # call of its own, 0: no call). A shared call's cost (llm_calls, tokens) is on the run of the turn that opened it.
    batch_turns = models.PositiveSmallIntegerField(default=0)
    # While set (and in the future), the worker holding this run waits for other turns to judge with it; a
    # worker that takes another turn of the knowledge base meanwhile leaves that turn to it.
    gathering_until = models.DateTimeField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["outcome", "-created_at"])]
        constraints = [
            models.CheckConstraint(condition=models.Q(outcome__in=DetectionOutcome.values), name="detection_outcome_valid"),
        ]

    @classmethod
    def lease_ttl_s(cls) -> float:
        """A check is bounded by DETECTION_TIMEOUT_S after its batch gate, so its claim need not outlive that
        by more than DETECTION_CLAIM_MARGIN_S: the sweeper re-sends an abandoned one (its worker or its
        database died) within a sweep or two instead of after the task's hard time limit (300 s)."""
        return (settings.DETECTION_TIMEOUT_S + settings.DETECTION_BATCH_WAIT_MS / 1000
                + 4 * settings.WORKER_YIELD_MAX_S + settings.DETECTION_CLAIM_MARGIN_S)

    def lease_give_up(self, reason: str) -> dict:

        return {"outcome": DetectionOutcome.ERROR, "reason": f"{reason}; recorded as no conflicts",
                "finished_at": timezone.now()}


class ConflictStatus(models.TextChoices):
    OPEN = "open", "Open"
    PROCESSED = "processed", "Resolved"
    DISMISSED = "dismissed", "Dismissed"


# Words people use for a status: the console says "Resolved" for processed.
STATUS_ALIASES = {"resolved": ConflictStatus.PROCESSED}


def status_label(value: str) -> str:
    """What screens, e-mails and the activity log call a stored status ("processed" → "Resolved")."""
    return ConflictStatus(value).label if value in ConflictStatus.values else value


class ConflictSubstatus(models.TextChoices):
    """A marker beside the status (never a fourth status): why an open conflict is in Open."""

    NONE = "", "—"
    REGRESSED = "regressed", "Regressed"


# The types and their labels are agents.types' (one list for detectors, schema, prompt and console), with the
# one-article finding kinds after the detectors' pair types.
ConflictType = models.TextChoices("ConflictType", [(value.upper(), (value, label)) for value, label in RECORDED_TYPE_LABELS.items()])
# A pair (article_high set, no disputed_version) unless it is a one-article finding (the reverse).
ONE_ARTICLE_TYPES = (MODEL_DISAGREES,)


class ReviewWinner(models.TextChoices):
    """Which side the reviewer found right; the Observer learns from it."""

    LOW = "low", "First article"
    HIGH = "high", "Second article"
    NEITHER = "neither", "Neither"
    BOTH = "both", "Both partly / intentional difference"


class Conflict(models.Model):
    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="conflicts")
    # The pair, lower article id first, so (a, b) and (b, a) are one row.
    article_low = models.ForeignKey(Article, on_delete=models.CASCADE, related_name="+")
    # Null for a one-article finding (ONE_ARTICLE_TYPES), which names the version it disputes instead.
    article_high = models.ForeignKey(Article, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    disputed_version = models.ForeignKey(ArticleVersion, null=True, blank=True, on_delete=models.RESTRICT, related_name="+")
    status = models.CharField(max_length=10, choices=ConflictStatus.choices, default=ConflictStatus.OPEN)
    # "regressed": reviewed, then detected again on other texts than those reviewed, so back in Open.
    substatus = models.CharField(max_length=10, choices=ConflictSubstatus.choices, default=ConflictSubstatus.NONE, blank=True)
    type = models.CharField(max_length=20, choices=ConflictType.choices, default=ConflictType.OTHER)
    explanation = models.TextField(blank=True)
    snippet_low = models.TextField(blank=True)
    snippet_high = models.TextField(blank=True)
    detector = models.CharField(max_length=20, blank=True)
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()
    times_seen = models.PositiveIntegerField(default=0)
    times_cited = models.PositiveIntegerField(default=0)  # occurrences whose reply cited one or both of the two
    # log of Σ exp((t - epoch) / τ) over occurrences: ordering by it is ordering by a recency-decayed
    # count at any moment, kept as one indexed column instead of a 500k-row aggregate per page.
    impact = models.FloatField(default=0.0)
    recurred_after_review = models.BooleanField(default=False)
    # The versions the review left current; null for a side the review deleted.
    reviewed_version_low = models.ForeignKey(ArticleVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    reviewed_version_high = models.ForeignKey(ArticleVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # The queue's text search: explanation and both passages, kept by PostgreSQL (GIN-indexed below).
    search_vector = models.GeneratedField(
        expression=SearchVector("explanation", weight="A", config="english")
        + SearchVector("snippet_low", "snippet_high", weight="B", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    reviewed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    assignee = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # Snoozed (open, hidden from the Open tab) until this moment and/or until times_seen reaches this count.
    snoozed_until = models.DateTimeField(null=True, blank=True)
    snoozed_until_seen = models.PositiveIntegerField(null=True, blank=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_note = models.TextField(blank=True)
    winner = models.CharField(max_length=10, choices=ReviewWinner.choices, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["article_low", "article_high"], name="conflict_pair_unique"),
            models.CheckConstraint(condition=models.Q(article_low__lt=models.F("article_high")), name="conflict_pair_ordered"),
            # Exactly the one-article kinds lack a second article, and they alone name a disputed version.
            models.CheckConstraint(
                condition=models.Q(type__in=ONE_ARTICLE_TYPES, article_high__isnull=True, disputed_version__isnull=False)
                | (~models.Q(type__in=ONE_ARTICLE_TYPES) & models.Q(article_high__isnull=False, disputed_version__isnull=True)),
                name="conflict_sides_match_type",
            ),
            # One finding per disputed article version; seen again, it gains occurrences.
            models.UniqueConstraint(fields=["disputed_version"], condition=models.Q(disputed_version__isnull=False),
                                    name="conflict_one_finding_per_version"),
            models.CheckConstraint(condition=models.Q(status__in=ConflictStatus.values), name="conflict_status_valid"),
            models.CheckConstraint(condition=models.Q(type__in=ConflictType.values), name="conflict_type_valid"),
            models.CheckConstraint(condition=models.Q(winner__in=["", *ReviewWinner.values]), name="conflict_winner_valid"),
            models.CheckConstraint(
                condition=models.Q(substatus__in=ConflictSubstatus.values)
                & (models.Q(substatus=ConflictSubstatus.NONE) | models.Q(status=ConflictStatus.OPEN)),
                name="conflict_substatus_valid",
            ),
        ]
        indexes = [
            models.Index(fields=["knowledge_base", "status", "-times_cited", "-impact", "-last_seen"], name="conflict_queue_impact"),
            models.Index(fields=["knowledge_base", "status", "-last_seen"], name="conflict_queue_recent"),
            models.Index(fields=["knowledge_base", "status", "-reviewed_at"], name="conflict_queue_reviewed"),
            models.Index(fields=["knowledge_base", "type", "status"], name="conflict_queue_type"),
            models.Index(fields=["knowledge_base", "assignee", "status"], name="conflict_queue_assignee"),
            # The queue's tab counts (GROUP BY status under the queue's filters, snoozed ones left out) read
            # this index alone: every column those filters test is in it.
            models.Index(
                fields=["knowledge_base", "status"],
                include=["type", "substatus", "assignee", "snoozed_until", "snoozed_until_seen", "times_seen"],
                name="conflict_tab_counts",
            ),
            GinIndex(fields=["search_vector"], name="conflict_search_vector_gin"),
            # The answer-time look-up (conflicts.services.policy): open conflicts touching the retrieved articles.
            models.Index(fields=["article_low"], condition=models.Q(status=ConflictStatus.OPEN), name="conflict_open_by_low"),
            models.Index(fields=["article_high"], condition=models.Q(status=ConflictStatus.OPEN), name="conflict_open_by_high"),
        ]

    def __str__(self) -> str:
        return f"conflict {self.pk}: {self.article_low_id} vs {self.article_high_id}"

    def snoozed_at(self, moment) -> bool:
        """Snoozed at `moment`: until its date or until it has been seen the agreed number of times,
        whichever comes first (as the snooze's activity row says)."""
        if self.status != ConflictStatus.OPEN or (self.snoozed_until is None and self.snoozed_until_seen is None):
            return False
        return (self.snoozed_until is None or self.snoozed_until > moment) and (
            self.snoozed_until_seen is None or self.times_seen < self.snoozed_until_seen
        )

    def snippet_for(self, article_id: int) -> str:
        return self.snippet_low if article_id == self.article_low_id else self.snippet_high

    @property
    def is_pair(self) -> bool:
        """Two articles that disagree; False for a one-article finding (no sides, no MACR suggestion)."""
        return self.article_high_id is not None

    @property
    def disputed_version_outdated(self) -> bool:
        """A one-article finding whose article has a newer version than the one it disputes."""
        return not self.is_pair and self.disputed_version_id != self.article_low.current_version_id


class Citation(models.TextChoices):
    """What the reply sent in an occurrence's turn cited of the pair."""

    NEITHER = "neither", "Cited neither"
    ONE = "one", "Cited one of the two"
    BOTH = "both", "Cited both"

    @classmethod
    def of(cls, *, low: bool, high: bool) -> "Citation":
        return cls.BOTH if low and high else cls.ONE if low or high else cls.NEITHER


class ConflictOccurrence(models.Model):
    """The conflict showed up in this turn; links it to the reply that was actually sent."""

    conflict = models.ForeignKey(Conflict, on_delete=models.CASCADE, related_name="occurrences")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="occurrences")
    version_low = models.ForeignKey(ArticleVersion, on_delete=models.RESTRICT, related_name="+")
    version_high = models.ForeignKey(ArticleVersion, null=True, blank=True, on_delete=models.RESTRICT, related_name="+")  # null: one-article finding
    detector = models.CharField(max_length=20)
    citation = models.CharField(max_length=10, choices=Citation.choices, default=Citation.NEITHER)
    # A model-disagreement sighting: what the model answered from the article's snippet and closed-book.
    context_preview = models.TextField(blank=True)
    memory_preview = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["conflict", "turn"], name="occurrence_unique_per_turn"),
            models.CheckConstraint(condition=models.Q(citation__in=Citation.values), name="occurrence_citation_valid"),
        ]
        indexes = [
            models.Index(fields=["conflict", "-created_at"]),
            models.Index(fields=["conflict", "citation", "-created_at"], name="occurrence_by_citation"),
        ]

    @property
    def cited(self) -> bool:
        return self.citation != Citation.NEITHER


class PairVerdict(models.Model):
    """A judged pair of article versions, conflict or not: never sent to the LLM again until one side changes."""

    version_low = models.ForeignKey(ArticleVersion, on_delete=models.CASCADE, related_name="+")
    version_high = models.ForeignKey(ArticleVersion, on_delete=models.CASCADE, related_name="+")
    is_conflict = models.BooleanField()
    type = models.CharField(max_length=20, blank=True)
    explanation = models.TextField(blank=True)
    snippets = models.JSONField(default=dict, blank=True)
    detector = models.CharField(max_length=20)
    model = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["version_low", "version_high"], name="verdict_unique_per_version_pair"),
            models.CheckConstraint(condition=models.Q(version_low__lt=models.F("version_high")), name="verdict_pair_ordered"),
        ]


class ClaimPairVerdict(models.Model):
    """Two claims (each with its article's title and its heading, as the LLM was shown them) that a call showed
    only for pairs it judged "no conflict": in this knowledge base they are not shown to it again, in whichever
    pair of articles states them under those titles and headings (agents.excerpts). Keyed by text, not by
    version, so an edited article keeps the verdicts of the sentences it did not change."""

    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=32)  # agents.excerpts.claim_pair_key
    model = models.CharField(max_length=200, blank=True)  # the LLM that judged them
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["knowledge_base", "key"], name="claim_pair_verdict_unique_per_kb"),
        ]


class ActivityKind(models.TextChoices):
    OPENED = "opened", "Detected"
    RESOLVED = "resolved", "Resolved"
    DISMISSED = "dismissed", "Dismissed"
    REOPENED = "reopened", "Reopened"
    RECURRED = "recurred", "Recurred after review"
    REGRESSED = "regressed", "Regressed: back in Open"
    SUGGESTED = "suggested", "Suggestion computed"
    ASSIGNED = "assigned", "Assigned"
    COMMENTED = "commented", "Comment"
    SNOOZED = "snoozed", "Snoozed"
    UNSNOOZED = "unsnoozed", "Snooze ended"


class ConflictActivity(models.Model):
    """The timeline of a conflict: who did what, when."""

    conflict = models.ForeignKey(Conflict, on_delete=models.CASCADE, related_name="activity")
    kind = models.CharField(max_length=12, choices=ActivityKind.choices)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    from_status = models.CharField(max_length=10, choices=ConflictStatus.choices, blank=True)
    to_status = models.CharField(max_length=10, choices=ConflictStatus.choices, blank=True)
    note = models.TextField(blank=True)
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["conflict", "-created_at"])]
        constraints = [
            models.CheckConstraint(condition=models.Q(kind__in=ActivityKind.values), name="activity_kind_valid"),
            models.CheckConstraint(
                condition=models.Q(from_status__in=["", *ConflictStatus.values], to_status__in=["", *ConflictStatus.values]),
                name="activity_statuses_valid",
            ),
        ]

    # The console's words for the statuses ("Resolved", never the stored "processed").
    @property
    def from_status_label(self) -> str:
        return status_label(self.from_status)

    @property
    def to_status_label(self) -> str:
        return status_label(self.to_status)


class TokenScope(models.TextChoices):
    """What an API token may do; each endpoint needs one."""

    TURNS_WRITE = "turns:write", "Report turns and replies, read their outcome"
    ANSWER = "answer", "Ask the built-in answer path"
    CONFLICTS_READ = "conflicts:read", "List conflicts"


def all_token_scopes() -> list[str]:
    return list(TokenScope.values)


class ApiToken(models.Model):
    """A chatbot's credential for one knowledge base. Only a SHA-256 of the secret is stored."""

    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12)  # shown in lists so a token can be recognised
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    scopes = ArrayField(models.CharField(max_length=20, choices=TokenScope.choices), default=all_token_scopes)
    expires_at = models.DateTimeField(null=True, blank=True)  # null: until revoked

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(scopes__contained_by=TokenScope.values), name="api_token_scopes_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class RuleStatus(models.TextChoices):
    CANDIDATE = "candidate", "Candidate"
    ACTIVE = "active", "Active"
    RETIRED = "retired", "Retired"


class RuleOrigin(models.TextChoices):
    EXECUTABLE = "executable", "Executable template"
    INDUCED = "induced", "Induced from decisions"
    MANUAL = "manual", "Written by staff"


class RuleKind(models.TextChoices):
    EXECUTABLE = "executable", "Evaluated in code"
    TEXTUAL = "textual", "Applied by the LLM"


class ResolutionRule(models.Model):
    """One rule of a knowledge base's rule base, with its validation figures.

    Executable templates live in code (agents.macr.rules) and are shared; each knowledge base keeps
    its own row per template for its own figures, status and on/off switch. Textual rules (induced or
    manual) are applied by the LLM."""

    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="resolution_rules")
    rule_id = models.CharField(max_length=100)
    type = models.CharField(max_length=20, default="*")
    condition = models.TextField()
    resolution = models.TextField()
    origin = models.CharField(max_length=12, choices=RuleOrigin.choices)
    kind = models.CharField(max_length=12, choices=RuleKind.choices, default=RuleKind.EXECUTABLE)
    status = models.CharField(max_length=10, choices=RuleStatus.choices, default=RuleStatus.CANDIDATE)
    enabled = models.BooleanField(default=True)
    priority = models.IntegerField(default=50)
    coverage = models.FloatField(null=True, blank=True)
    support = models.FloatField(null=True, blank=True)
    # The last validation's counts (support = validated_agreed / validated_cases), split by the standing of
    # the two sides, and the decisions it was validated on: [{"conflict": id, "agreed": bool}] (counter-examples
    # are the ones with agreed false).
    validated_cases = models.PositiveIntegerField(default=0)
    validated_agreed = models.PositiveIntegerField(default=0)
    validated_by_standing = models.JSONField(default=dict, blank=True)
    validated_on = models.JSONField(default=list, blank=True)
    times_applied = models.PositiveIntegerField(default=0)
    rule_base_version = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["knowledge_base", "rule_id"], name="rule_id_unique_per_kb"),
            models.CheckConstraint(condition=models.Q(status__in=RuleStatus.values), name="rule_status_valid"),
            models.CheckConstraint(condition=models.Q(origin__in=RuleOrigin.values), name="rule_origin_valid"),
            models.CheckConstraint(condition=models.Q(kind__in=RuleKind.values), name="rule_kind_valid"),
        ]
        ordering = ["priority", "rule_id"]


class InductionStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    SKIPPED = "skipped", "Skipped"
    FAILED = "failed", "Failed"


class InductionRun(Leased):
    """One run of the Observer: rules validated on held-out staff decisions. Queued by the nightly schedule
    or a person (started_at is then when it was queued), or written as it starts by a direct run."""

    lease_waiting_since = "started_at"
    lease_reason_field = "reason"

    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="induction_runs")
    status = models.CharField(max_length=10, choices=InductionStatus.choices, default=InductionStatus.RUNNING)
    reason = models.TextField(blank=True)
    decisions = models.PositiveIntegerField(default=0)
    training = models.PositiveIntegerField(default=0)
    validation = models.PositiveIntegerField(default=0)
    candidates = models.PositiveIntegerField(default=0)
    accepted = models.PositiveIntegerField(default=0)
    llm_calls = models.PositiveIntegerField(default=0)
    rule_base_version = models.PositiveIntegerField(default=0)
    figures = models.JSONField(default=list, blank=True)  # per rule: coverage, support, accepted
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at"]
        constraints = [
            models.CheckConstraint(condition=models.Q(status__in=InductionStatus.values), name="induction_status_valid"),
        ]


class SuggestionStatus(models.TextChoices):
    SUGGESTED = "suggested", "A side is suggested"
    ABSTAINED = "abstained", "Cannot tell"
    FAILED = "failed", "Failed"


class ResolutionSuggestion(models.Model):
    """The engine's latest suggestion for a conflict, and what it was computed on."""

    conflict = models.OneToOneField(Conflict, on_delete=models.CASCADE, related_name="suggestion")
    status = models.CharField(max_length=10, choices=SuggestionStatus.choices)
    winner = models.ForeignKey(Article, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    explanation = models.TextField(blank=True)
    rules = models.JSONField(default=list, blank=True)  # [{"id", "coverage", "support"}]
    confidence = models.FloatField(default=0.0)
    edit_article = models.ForeignKey(Article, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    proposed_edit = models.TextField(blank=True)
    version_low = models.ForeignKey(ArticleVersion, null=True, on_delete=models.SET_NULL, related_name="+")
    version_high = models.ForeignKey(ArticleVersion, null=True, on_delete=models.SET_NULL, related_name="+")
    rule_base_version = models.PositiveIntegerField(default=0)
    llm_calls = models.PositiveIntegerField(default=0)
    failure_reason = models.TextField(blank=True)  # why there is no suggestion (never a guess instead)
    # No rule covered it: the LLM judged from its own knowledge, and the case goes back to the Observer.
    provisional = models.BooleanField(default=False)
    feedback = models.JSONField(default=dict, blank=True)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=models.Q(status__in=SuggestionStatus.values), name="suggestion_status_valid"),
        ]


class AnswerSettings(models.Model):
    """How the built-in answer path answers for one knowledge base; without a row, STRICT and policy off."""

    knowledge_base = models.OneToOneField(KnowledgeBase, on_delete=models.CASCADE, related_name="answer_settings")
    default_mode = models.CharField(max_length=10, choices=AnswerMode.choices, default=AnswerMode.STRICT)
    # Record "the model disagrees with this article" findings when IGD's answer-level filter routes to memory
    # against an article. Off by default: a small model's memory is weak, and its disagreements mostly noise.
    record_model_disagreements = models.BooleanField(default=False)
    # What answers do about open conflicts (AnswerPolicy), the caveat's sentence, and the suggestion confidence at
    # or above which prefer_suggested / quarantine act on a suggested side.
    policy = models.CharField(max_length=20, choices=AnswerPolicy.choices, default=AnswerPolicy.OFF)
    caveat_text = models.CharField(max_length=CAVEAT_MAX_LENGTH, default=DEFAULT_CAVEAT)
    prefer_threshold = models.FloatField(default=DEFAULT_PREFER_THRESHOLD)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "answer settings"
        constraints = [
            models.CheckConstraint(condition=models.Q(default_mode__in=AnswerMode.values), name="answer_settings_mode_valid"),
            models.CheckConstraint(condition=models.Q(policy__in=AnswerPolicy.values), name="answer_settings_policy_valid"),
            models.CheckConstraint(condition=models.Q(prefer_threshold__gte=0.0, prefer_threshold__lte=1.0),
                                   name="answer_settings_threshold_range"),
        ]


class PolicyAction(models.TextChoices):
    CAVEAT = "caveat", "Answered under a caveat"
    HELD_BACK = "held_back", "A side held back"


class PolicyDecision(models.Model):
    """What the answer policy did about one open conflict in one turn: the reply carried the caveat (built-in path;
    for a chatbot, its reply cited an article of the conflict while the policy was caveat) or one side was held back
    from the answer's context (built-in path; for a chatbot, it was told to leave it out). Keyed like an occurrence
    (conflict, turn), so the occurrence of the same turn reads whether a side was held back."""

    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="+")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="policy_decisions")
    conflict = models.ForeignKey("Conflict", on_delete=models.CASCADE, related_name="policy_decisions")
    policy = models.CharField(max_length=20, choices=AnswerPolicy.choices)
    action = models.CharField(max_length=10, choices=PolicyAction.choices)
    held_back = models.ForeignKey(Article, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    confidence = models.FloatField(null=True, blank=True)  # the suggestion's, for a side held back
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["turn", "conflict"], name="policy_decision_once_per_turn"),
            models.CheckConstraint(condition=models.Q(action__in=PolicyAction.values), name="policy_decision_action_valid"),
            models.CheckConstraint(condition=models.Q(policy__in=AnswerPolicy.values), name="policy_decision_policy_valid"),
            models.CheckConstraint(
                condition=models.Q(action=PolicyAction.HELD_BACK, held_back__isnull=False)
                | models.Q(action=PolicyAction.CAVEAT, held_back__isnull=True),
                name="policy_decision_held_back_names_article",
            ),
        ]
        indexes = [
            models.Index(fields=["conflict", "action"], name="policy_decision_by_conflict"),
            models.Index(fields=["knowledge_base", "created_at"], name="policy_decision_by_week"),
        ]


# Every work row has the re-sync job's lifecycle: queued -> running -> done | failed.
JobStatus = SyncStatus


class SuggestionJob(Leased):
    """A suggestion to compute for a conflict on given article versions: the work row a worker claims.

    At most one is pending per (conflict, versions), and one that finished is not computed again for the
    same versions unless a reviewer asks (the partial unique constraint and suggestions_enqueue)."""

    conflict = models.ForeignKey(Conflict, on_delete=models.CASCADE, related_name="suggestion_jobs")
    version_low = models.ForeignKey(ArticleVersion, on_delete=models.CASCADE, related_name="+")
    version_high = models.ForeignKey(ArticleVersion, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.QUEUED)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["conflict", "version_low", "version_high"],
                condition=models.Q(status__in=[JobStatus.QUEUED, JobStatus.RUNNING]),
                name="suggestion_job_one_pending_per_versions",
            ),
            models.CheckConstraint(condition=models.Q(status__in=JobStatus.values), name="suggestion_job_status_valid"),
        ]
        indexes = [models.Index(fields=["status", "created_at"], name="suggestion_job_sweep")]



# --- notifications: webhooks and e-mail for new high-impact conflicts, regressions, assignments ---


class NotificationEventKind(models.TextChoices):
    NEW_CONFLICT = "conflict.new", "New conflict over the impact threshold"
    REGRESSED = "conflict.regressed", "Reviewed conflict came back (regressed)"
    ASSIGNED = "conflict.assigned", "Conflict assigned"


class EmailMode(models.TextChoices):
    OFF = "off", "No e-mail"
    IMMEDIATE = "immediate", "An e-mail per event"
    DIGEST = "digest", "A daily digest"


class NotificationSettings(models.Model):
    """Per knowledge base: when a new conflict is worth telling people about, and addresses that are not
    members (a team inbox) with how they hear. Without a row, the defaults below apply."""

    knowledge_base = models.OneToOneField(KnowledgeBase, on_delete=models.CASCADE, related_name="notification_settings")
    # A new conflict is notified once (when it first reaches either): seen in this many turns, or cited
    # by this many replies (the queue's "cited in N replies / retrieved in M").
    min_seen = models.PositiveIntegerField(default=3)
    min_cited = models.PositiveIntegerField(default=1)
    email_recipients = ArrayField(models.EmailField(max_length=254), default=list, blank=True)
    email_mode = models.CharField(max_length=10, choices=EmailMode.choices, default=EmailMode.IMMEDIATE)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "notification settings"
        constraints = [
            models.CheckConstraint(condition=models.Q(email_mode__in=EmailMode.values), name="notification_settings_mode_valid"),
            models.CheckConstraint(condition=models.Q(min_seen__gte=1, min_cited__gte=1), name="notification_settings_thresholds_positive"),
        ]


class NotificationPreference(models.Model):
    """How one member hears about one knowledge base's events by e-mail (off unless they choose)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_preferences")
    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="+")
    email_mode = models.CharField(max_length=10, choices=EmailMode.choices, default=EmailMode.OFF)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "knowledge_base"], name="notification_preference_unique"),
            models.CheckConstraint(condition=models.Q(email_mode__in=EmailMode.values), name="notification_preference_mode_valid"),
        ]


def all_event_kinds() -> list[str]:
    return list(NotificationEventKind.values)


class Webhook(models.Model):
    """An outgoing webhook of one knowledge base. Its signing secret is stored encrypted (the signature
    needs the secret itself, so it cannot be hashed like an API token) and shown once."""

    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=1000)
    secret_encrypted = models.TextField()
    secret_hint = models.CharField(max_length=16)  # the secret's first characters, to recognise it
    events = ArrayField(models.CharField(max_length=30, choices=NotificationEventKind.choices), default=all_event_kinds)
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    secret_rotated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(events__contained_by=NotificationEventKind.values), name="webhook_events_valid"),
        ]

    def __str__(self) -> str:
        return self.url


class NotificationEvent(models.Model):
    """Something worth telling: recorded once (the unique key) by the service that saw it, in its
    transaction; deliveries are made from it. `payload` is what webhooks receive."""

    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="+")
    conflict = models.ForeignKey(Conflict, on_delete=models.CASCADE, related_name="notification_events")
    kind = models.CharField(max_length=30, choices=NotificationEventKind.choices)
    # Tells repeated events of one kind apart: "" for a new conflict (once per conflict), the activity
    # row's id for a regression or an assignment.
    key = models.CharField(max_length=64, blank=True)
    assignee = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["conflict", "kind", "key"], name="notification_event_once"),
            models.CheckConstraint(condition=models.Q(kind__in=NotificationEventKind.values), name="notification_event_kind_valid"),
        ]
        indexes = [models.Index(fields=["knowledge_base", "created_at"], name="notification_event_by_day")]


class DeliveryChannel(models.TextChoices):
    WEBHOOK = "webhook", "Webhook"
    EMAIL = "email", "E-mail"
    DIGEST = "digest", "Daily digest"


class DeliveryStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    SENDING = "sending", "Sending"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"


class NotificationDelivery(Leased):
    """One message to one webhook or address: the work row a worker claims (queued -> sending ->
    delivered | queued again with a later next_attempt_at | failed). Its body is fixed when it is made,
    so every attempt sends the same bytes (and the same signature)."""

    lease_held = "sending"
    lease_waiting_since = "next_attempt_at"

    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="+")
    channel = models.CharField(max_length=10, choices=DeliveryChannel.choices)
    event = models.ForeignKey(NotificationEvent, null=True, blank=True, on_delete=models.CASCADE, related_name="deliveries")
    webhook = models.ForeignKey(Webhook, null=True, blank=True, on_delete=models.SET_NULL, related_name="deliveries")
    target = models.CharField(max_length=1000)  # the URL or address, as it was when made (kept for the log)
    digest_date = models.DateField(null=True, blank=True)
    subject = models.CharField(max_length=300, blank=True)
    body = models.TextField()
    status = models.CharField(max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.QUEUED)
    next_attempt_at = models.DateTimeField()
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["event", "webhook"], condition=models.Q(channel="webhook"), name="delivery_once_per_webhook"),
            models.UniqueConstraint(fields=["event", "target"], condition=models.Q(channel="email"), name="delivery_once_per_address"),
            models.UniqueConstraint(fields=["knowledge_base", "target", "digest_date"], condition=models.Q(channel="digest"),
                                    name="digest_once_per_address_and_day"),
            models.CheckConstraint(condition=models.Q(status__in=DeliveryStatus.values), name="delivery_status_valid"),
            models.CheckConstraint(condition=models.Q(channel__in=DeliveryChannel.values), name="delivery_channel_valid"),
            models.CheckConstraint(
                condition=models.Q(channel="digest", digest_date__isnull=False, event__isnull=True)
                | (~models.Q(channel="digest") & models.Q(event__isnull=False)),
                name="delivery_channel_fields",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="delivery_sweep"),
            models.Index(fields=["knowledge_base", "-created_at"], name="delivery_log"),
        ]

    @classmethod
    def lease_max_attempts(cls) -> int:
        return settings.NOTIFICATION_MAX_ATTEMPTS

    @classmethod
    def lease_due(cls, now):
        return models.Q(next_attempt_at__lte=now)

    def lease_give_up(self, reason: str) -> dict:
        return {"status": DeliveryStatus.FAILED, "last_error": reason[:2000], "claimed_at": None}

    @property
    def sendable_again(self) -> bool:
        """A failed delivery that a retry could send: not one whose webhook has been deleted since."""
        return self.status == DeliveryStatus.FAILED and not (
            self.channel == DeliveryChannel.WEBHOOK and self.webhook_id is None
        )
