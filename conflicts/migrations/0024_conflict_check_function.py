"""The open-conflict look-up of the answer path as a PL/pgSQL function (conflicts.services.policy.conflict_check).

Why a function: the look-up as a plain statement spent 1.2-2.6 ms planning for 0.4-1.3 ms of execution, on every
turn. PL/pgSQL keeps its statements' plans for the session, and `plan_cache_mode = force_generic_plan` makes it keep
one plan from the first call on (left to `auto`, the planner kept planning anew: the generic plan's estimate for an
array of refs looks dearer than it is). Every step is an index look-up, whatever the knowledge base or the refs, so
one plan serves them all. Django's cursor calls it like any statement, so its error handling (and the look-up's
fail-open) apply as before.

What it returns is what the policy acts on, decided here so the LIMIT keeps the right rows: the settings row (or
NULLs; with the answer's default mode, which the answer path would otherwise read in a query of its own), then one row per open conflict the turn must be told about, most impactful first — both sides retrieved
(or a finding about one article), a side held back, or, under caveat, any open conflict touching a retrieved
article. A conflict's suggested side counts only while the suggestion is current: "suggested", at or above the
threshold, computed on the articles' current versions and after staff's last decision (reviewed_at).
Values are spelled as the choices stood when this was written (a migration is frozen): ConflictStatus.OPEN,
SuggestionStatus.SUGGESTED and the AnswerPolicy values.
"""
from django.db import migrations

CREATE = r"""
CREATE OR REPLACE FUNCTION conflict_check_rows(
    p_kb bigint, p_refs text[], p_limit integer, p_default_threshold double precision
)
RETURNS TABLE (
    policy text, caveat_text text, prefer_threshold double precision, default_mode text,
    id bigint, type text, explanation text,
    low_id bigint, low_ref text, high_id bigint, high_ref text,
    suggested_id bigint, confidence double precision, held_back_id bigint
)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH st AS (
        SELECT a.policy, a.caveat_text, a.prefer_threshold, a.default_mode
        FROM conflicts_answersettings a WHERE a.knowledge_base_id = p_kb
    ), p AS (
        SELECT coalesce((SELECT st.policy FROM st), 'off') AS policy,
               coalesce((SELECT st.prefer_threshold FROM st), p_default_threshold) AS threshold
    ), r AS (
        SELECT a.id FROM articles_article a WHERE a.knowledge_base_id = p_kb AND a.external_ref = ANY(p_refs)
    ), touching AS (
        SELECT x.id FROM conflicts_conflict x
        WHERE x.status = 'open' AND x.knowledge_base_id = p_kb AND x.article_low_id IN (SELECT r.id FROM r)
        UNION
        SELECT x.id FROM conflicts_conflict x
        WHERE x.status = 'open' AND x.knowledge_base_id = p_kb AND x.article_high_id IN (SELECT r.id FROM r)
    ), judged AS (
        SELECT c.id, c.type, c.explanation, c.impact,
               c.article_low_id AS low_id, lo.external_ref AS low_ref,
               c.article_high_id AS high_id, hi.external_ref AS high_ref,
               (c.article_high_id IS NULL
                OR (c.article_low_id IN (SELECT r.id FROM r) AND c.article_high_id IN (SELECT r.id FROM r))) AS both_in,
               CASE WHEN c.article_high_id IS NOT NULL
                         AND s.status = 'suggested'
                         AND s.winner_id IN (c.article_low_id, c.article_high_id)
                         AND s.confidence >= (SELECT p.threshold FROM p)
                         AND s.version_low_id IS NOT DISTINCT FROM lo.current_version_id
                         AND s.version_high_id IS NOT DISTINCT FROM hi.current_version_id
                         AND (c.reviewed_at IS NULL OR s.computed_at > c.reviewed_at)
                    THEN s.winner_id END AS suggested_id,
               s.confidence
        FROM conflicts_conflict c
        JOIN articles_article lo ON lo.id = c.article_low_id
        LEFT JOIN articles_article hi ON hi.id = c.article_high_id
        LEFT JOIN conflicts_resolutionsuggestion s ON s.conflict_id = c.id
        WHERE c.id IN (SELECT touching.id FROM touching)
    ), decided AS (
        SELECT j.*, p.policy,
               CASE WHEN j.suggested_id IS NOT NULL AND p.policy IN ('prefer_suggested', 'quarantine') THEN
                    CASE WHEN j.suggested_id = j.low_id THEN j.high_id ELSE j.low_id END
               END AS loser_id
        FROM judged j CROSS JOIN p
    ), kept AS (
        SELECT d.id, d.type, d.explanation, d.impact, d.low_id, d.low_ref, d.high_id, d.high_ref,
               d.suggested_id, CASE WHEN d.suggested_id IS NOT NULL THEN d.confidence END AS confidence,
               CASE WHEN d.loser_id IN (SELECT r.id FROM r) AND (d.policy = 'quarantine' OR d.both_in)
                    THEN d.loser_id END AS held_back_id,
               d.both_in, d.policy
        FROM decided d
    )
    SELECT st.policy::text, st.caveat_text::text, st.prefer_threshold::double precision, st.default_mode::text,
           k.id::bigint, k.type::text, k.explanation::text,
           k.low_id::bigint, k.low_ref::text, k.high_id::bigint, k.high_ref::text,
           k.suggested_id::bigint, k.confidence::double precision, k.held_back_id::bigint
    FROM (SELECT 1) AS one
    LEFT JOIN st ON TRUE
    LEFT JOIN LATERAL (
        SELECT kept.* FROM kept
        WHERE kept.both_in OR kept.held_back_id IS NOT NULL OR kept.policy = 'caveat'
        ORDER BY kept.impact DESC, kept.id
        LIMIT p_limit
    ) AS k ON TRUE
    ORDER BY k.impact DESC, k.id;
END
$function$;
"""

DROP = "DROP FUNCTION IF EXISTS conflict_check_rows(bigint, text[], integer, double precision);"


class Migration(migrations.Migration):

    dependencies = [
        ("conflicts", "0023_induction_status_queued_valid"),
    ]

    operations = [migrations.RunSQL(CREATE, reverse_sql=DROP)]
