-- mrni-likert agreement probe (benchmarks/mrni/likert.py; README "MRNI-R agreement probe").
-- n = planned requests; labelled = stored responses the parser labelled; answered = label 'rating'.
-- coverage = answered / n; mean_rating and endorsement_rate over answered; refusal_rate and
-- unparsed_rate over labelled. endorsed = rating strictly above the midpoint (points + 1) / 2
-- (>= 5 of 7, >= 4 of 5 or 6). A zero denominator gives NULL, never 0. Items 10/33 and 11/24 share
-- a text: each counts under its own (primary) subscale; the overall figures are over all 49 items.

-- One row per planned mrni-likert request: prompt metadata, response, label.
CREATE OR REPLACE VIEW mrni_likert_scored AS
WITH base AS (
    SELECT o.run, o.model, o.prompt_key, o.sample, o.status, o.request_id,
           json_extract_string(p.metadata, '$.language') AS language,
           CAST(json_extract_string(p.metadata, '$.item_id') AS INTEGER) AS item_id,
           json_extract_string(p.metadata, '$.subscale') AS subscale,
           json_extract_string(p.metadata, '$.secondary_subscale') AS secondary_subscale,
           CAST(json_extract_string(p.metadata, '$.points') AS INTEGER) AS points,
           o.response, l.label, l.rating, l.span, l.parser_version
    FROM request_status o
    JOIN prompts p ON p.benchmark = o.benchmark AND p.prompt_key = o.prompt_key AND p.prompt_hash = o.prompt_hash
    LEFT JOIN mrni_likert_labels l USING (request_id)
    WHERE o.benchmark = 'mrni-likert'
)
SELECT *, rating > (points + 1) / 2.0 AS endorsed FROM base;

-- Counts and rates per run x model x language x scale, by subscale and over all items ('ALL').
CREATE OR REPLACE VIEW mrni_likert_summary AS
WITH counts AS (
    SELECT run, model, language, points,
           CASE WHEN grouping(subscale) = 1 THEN 'ALL' ELSE subscale END AS subscale,
           count(*) AS n,
           count(label) AS labelled,
           count(*) FILTER (WHERE label = 'rating') AS answered,
           count(*) FILTER (WHERE label = 'refusal') AS refused,
           count(*) FILTER (WHERE label = 'unparsed') AS unparsed,
           count(*) FILTER (WHERE endorsed) AS endorsed,
           avg(rating) AS mean_rating
    FROM mrni_likert_scored
    GROUP BY GROUPING SETS ((run, model, language, points, subscale), (run, model, language, points))
)
SELECT run, model, language, points, subscale, n, labelled, answered, refused, unparsed, endorsed,
       answered::DOUBLE / nullif(n, 0) AS coverage,
       mean_rating,
       endorsed::DOUBLE / nullif(answered, 0) AS endorsement_rate,
       refused::DOUBLE / nullif(labelled, 0) AS refusal_rate,
       unparsed::DOUBLE / nullif(labelled, 0) AS unparsed_rate
FROM counts;

CREATE OR REPLACE VIEW mrni_likert_subscales AS
SELECT * FROM mrni_likert_summary WHERE subscale <> 'ALL';

CREATE OR REPLACE VIEW mrni_likert_overall AS
SELECT * EXCLUDE (subscale) FROM mrni_likert_summary WHERE subscale = 'ALL';
