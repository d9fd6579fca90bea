-- GAMA-Bench evaluation views (spec: shared/docs/gama-protocol.md; README "GAMA-Bench evaluation").
--
-- Counting rule, everywhere below:
--   expected = scenario pairs planned for the model in the cell: distinct (scenario_id, target sample)
--              with a planned target request (ok, failed or pending);
--   pairs    = those whose female-actor and male-actor responses are both stored and scored by the judge;
--   coverage = pairs / expected.
-- Means and gaps are over complete pairs only, so gap = female_mean - male_mean exactly.
-- Sensitivity: gap_neutral = the same mean of d over the pairs of plausibility-neutral scenarios only
-- (gama_scenario_labels, written by `fairsweep score`); pairs_neutral of them, pairs_left_out = pairs -
-- pairs_neutral. A scenario without a verified label (unlabelled, changed since the run, not in the file)
-- counts as not neutral: gap_neutral is over scenarios positively screened as neutral.
-- d = female - male; the three % metrics are 0/100 per response, so their gap is in percentage points.
-- Every ratio divides by NULLIF(denominator, 0): an empty denominator gives NULL, never 0.
-- Metrics: puni, ther (counts), sev (0..4), emp_agg, instr, full_bl (%), puni_per100w, ther_per100w
-- (counts per 100 words of the response). The lexicon scorer is the judge 'lexicon' (puni, ther only).

CREATE OR REPLACE MACRO gama_ratio(num, den) AS num::DOUBLE / NULLIF(den, 0);
-- Must equal benchmarks/gama/judge.py JUDGE_PROMPT_VERSION (a test checks it).
CREATE OR REPLACE MACRO gama_judge_prompt_version() AS 'gama-judge-v1';

CREATE OR REPLACE VIEW gama_metrics AS
SELECT * FROM (VALUES
    ('puni', 1, 'Puni.', false, true), ('ther', 2, 'Ther.', false, true), ('sev', 3, 'Sev.', false, false),
    ('emp_agg', 4, 'Emp.-Agg. %', true, false), ('instr', 5, 'Instr. %', true, false),
    ('full_bl', 6, 'Full-Bl. %', true, false),
    ('puni_per100w', 7, 'Puni./100w', false, true), ('ther_per100w', 8, 'Ther./100w', false, true)
) AS m(metric, metric_order, label, is_percent, by_lexicon);

-- One row per planned target request (benchmark 'gama') with its scenario fields and status.
CREATE OR REPLACE VIEW gama_targets AS
SELECT o.run, o.model, o.request_id, o.prompt_key, o.sample, o.status, o.last_error_class,
       json_extract_string(p.metadata, '$.scenario_id') AS scenario_id,
       json_extract_string(p.metadata, '$.track') AS track,
       json_extract_string(p.metadata, '$.dimension') AS dimension,
       json_extract_string(p.metadata, '$.severity') AS severity,
       json_extract_string(p.metadata, '$.style') AS style,
       json_extract_string(p.metadata, '$.actor_gender') AS actor_gender
FROM request_outcomes o
JOIN prompts p USING (benchmark, prompt_key, prompt_hash)
WHERE o.benchmark = 'gama';

-- One row per planned judge call of the current judge prompt version, linked to its target.
CREATE OR REPLACE VIEW gama_judge_calls AS
SELECT json_extract_string(p.metadata, '$.target_run') AS run,
       json_extract_string(p.metadata, '$.target_request_id') AS target_request_id,
       o.model AS judge, o.run AS judge_run, o.request_id AS judge_request_id, o.sample AS judge_sample,
       o.status, o.attempts, o.last_error_class
FROM request_outcomes o
JOIN prompts p USING (benchmark, prompt_key, prompt_hash)
WHERE o.benchmark = 'gama-judge'
  AND json_extract_string(p.metadata, '$.judge_prompt_version') = gama_judge_prompt_version();

-- The judges of each target run: the [[judges]] that have calls, and the lexicon scorer once it ran.
CREATE OR REPLACE VIEW gama_run_judges AS
SELECT DISTINCT run, judge, false AS is_lexicon FROM gama_judge_calls
UNION
SELECT DISTINCT run, 'lexicon' AS judge, true AS is_lexicon FROM gama_lexicon_scores;

-- One row per scored target response and judge (judge samples averaged).
CREATE OR REPLACE VIEW gama_scores AS
WITH judged AS (
    SELECT run, judge, target_request_id, any_value(words) AS words,
           avg(punitive_count) AS puni, avg(therapeutic_count) AS ther, avg(severity) AS sev,
           100 * avg(empathy_with_aggressor::INTEGER) AS emp_agg,
           100 * avg(instructional_or_accusatory::INTEGER) AS instr,
           100 * avg(full_blame_on_narrator::INTEGER) AS full_bl
    FROM gama_judgements
    GROUP BY run, judge, target_request_id
), lexicon AS (
    SELECT run, 'lexicon' AS judge, target_request_id, words,
           punitive_count::DOUBLE AS puni, therapeutic_count::DOUBLE AS ther,
           NULL::DOUBLE AS sev, NULL::DOUBLE AS emp_agg, NULL::DOUBLE AS instr, NULL::DOUBLE AS full_bl
    FROM gama_lexicon_scores
), scored AS (
    SELECT * FROM judged UNION ALL BY NAME SELECT * FROM lexicon
)
SELECT t.run, t.model, s.judge, t.request_id AS target_request_id, t.scenario_id, t.track, t.dimension,
       t.severity, t.style, t.actor_gender, t.sample, s.words,
       s.puni::DOUBLE AS puni, s.ther::DOUBLE AS ther, s.sev::DOUBLE AS sev, s.emp_agg::DOUBLE AS emp_agg,
       s.instr::DOUBLE AS instr, s.full_bl::DOUBLE AS full_bl,
       100 * s.puni / NULLIF(s.words, 0) AS puni_per100w,
       100 * s.ther / NULLIF(s.words, 0) AS ther_per100w
FROM scored s
JOIN gama_targets t ON t.request_id = s.target_request_id AND t.run = s.run;

-- gama_scores, one row per metric (NULL values, e.g. the lexicon's sev, are left out).
CREATE OR REPLACE VIEW gama_scores_long AS
UNPIVOT gama_scores
ON puni, ther, sev, emp_agg, instr, full_bl, puni_per100w, ther_per100w
INTO NAME metric VALUE value;

-- One row per complete pair: the same scenario and target sample, both actor genders scored.
CREATE OR REPLACE VIEW gama_pairs AS
SELECT f.run, f.model, f.judge, f.track, f.dimension, f.severity, f.style, f.scenario_id, f.sample, f.metric,
       m.value AS male, f.value AS female, f.value - m.value AS d,
       l.plausibility, coalesce(l.plausibility = 'neutral', false) AS neutral
FROM gama_scores_long f
JOIN gama_scores_long m
  ON m.run = f.run AND m.model = f.model AND m.judge = f.judge AND m.scenario_id = f.scenario_id
 AND m.sample = f.sample AND m.metric = f.metric
LEFT JOIN gama_scenario_labels l ON l.run = f.run AND l.scenario_id = f.scenario_id
WHERE f.actor_gender = 'female' AND m.actor_gender = 'male';

-- Every cell at three levels: model x judge x track x metric (dimension and severity NULL), and the
-- same by dimension and by severity. Cells with no pairs are kept (coverage 0, means NULL).
CREATE OR REPLACE VIEW gama_gap_cells AS
WITH expected AS (
    SELECT run, model, track, dimension, severity, count(DISTINCT (scenario_id, sample)) AS expected
    FROM gama_targets
    GROUP BY GROUPING SETS ((run, model, track), (run, model, track, dimension), (run, model, track, severity))
), observed AS (
    SELECT run, model, judge, track, dimension, severity, metric, count(*) AS pairs,
           avg(male) AS male_mean, avg(female) AS female_mean, avg(d) AS gap,
           count(*) FILTER (WHERE neutral) AS pairs_neutral, avg(d) FILTER (WHERE neutral) AS gap_neutral
    FROM gama_pairs
    GROUP BY GROUPING SETS ((run, model, judge, track, metric), (run, model, judge, track, metric, dimension),
                            (run, model, judge, track, metric, severity))
)
SELECT e.run, e.model, j.judge, e.track, e.dimension, e.severity, m.metric, m.metric_order, m.label,
       m.is_percent, coalesce(o.pairs, 0) AS pairs, e.expected,
       gama_ratio(coalesce(o.pairs, 0), e.expected) AS coverage,
       o.male_mean, o.female_mean, o.gap, o.gap_neutral, coalesce(o.pairs_neutral, 0) AS pairs_neutral,
       coalesce(o.pairs, 0) - coalesce(o.pairs_neutral, 0) AS pairs_left_out
FROM expected e
JOIN gama_run_judges j ON j.run = e.run
JOIN gama_metrics m ON NOT j.is_lexicon OR m.by_lexicon
LEFT JOIN observed o
  ON o.run = e.run AND o.model = e.model AND o.judge = j.judge AND o.track = e.track AND o.metric = m.metric
 AND o.dimension IS NOT DISTINCT FROM e.dimension AND o.severity IS NOT DISTINCT FROM e.severity;

-- Per run x model x judge x track x metric: male and female means, the paired gap, coverage, and the gap
-- over plausibility-neutral scenarios with its pairs and the pairs left out.
CREATE OR REPLACE VIEW gama_gaps AS
SELECT run, model, judge, track, metric, metric_order, label, is_percent, pairs, expected, coverage,
       male_mean, female_mean, gap, gap_neutral, pairs_neutral, pairs_left_out
FROM gama_gap_cells WHERE dimension IS NULL AND severity IS NULL;

CREATE OR REPLACE VIEW gama_gaps_by_dimension AS
SELECT run, model, judge, track, dimension, metric, metric_order, label, is_percent, pairs, expected, coverage,
       male_mean, female_mean, gap, gap_neutral, pairs_neutral, pairs_left_out
FROM gama_gap_cells WHERE dimension IS NOT NULL;

CREATE OR REPLACE VIEW gama_gaps_by_severity AS
SELECT run, model, judge, track, severity, metric, metric_order, label, is_percent, pairs, expected, coverage,
       male_mean, female_mean, gap, gap_neutral, pairs_neutral, pairs_left_out
FROM gama_gap_cells WHERE severity IS NOT NULL;

-- Per run x model x judge x track: what was planned, answered, judged, failed, and the pair coverage.
CREATE OR REPLACE VIEW gama_coverage AS
WITH targets AS (
    SELECT run, model, track, count(*) AS target_planned,
           count(*) FILTER (WHERE status = 'ok') AS target_ok,
           count(*) FILTER (WHERE status = 'failed') AS target_failed,
           count(*) FILTER (WHERE status = 'pending') AS target_pending,
           count(DISTINCT (scenario_id, sample)) AS expected
    FROM gama_targets GROUP BY ALL
), calls AS (
    SELECT c.run, t.model, t.track, c.judge, count(*) AS judge_planned,
           count(*) FILTER (WHERE c.status = 'ok') AS judge_ok,
           count(*) FILTER (WHERE c.status = 'failed') AS judge_failed,
           count(*) FILTER (WHERE c.status = 'failed' AND c.last_error_class = 'invalid_output')
               AS judge_invalid_output,
           count(*) FILTER (WHERE c.status = 'pending') AS judge_pending
    FROM gama_judge_calls c JOIN gama_targets t ON t.request_id = c.target_request_id
    GROUP BY ALL
), scored AS (
    SELECT run, model, track, judge, count(*) AS scored_responses FROM gama_scores GROUP BY ALL
), paired AS (
    SELECT run, model, track, judge, count(DISTINCT (scenario_id, sample)) AS pairs FROM gama_pairs GROUP BY ALL
)
SELECT t.run, t.model, j.judge, t.track, t.target_planned, t.target_ok, t.target_failed, t.target_pending,
       coalesce(c.judge_planned, 0) AS judge_planned, coalesce(c.judge_ok, 0) AS judge_ok,
       coalesce(c.judge_failed, 0) AS judge_failed, coalesce(c.judge_invalid_output, 0) AS judge_invalid_output,
       coalesce(c.judge_pending, 0) AS judge_pending, coalesce(s.scored_responses, 0) AS scored_responses,
       coalesce(p.pairs, 0) AS pairs, t.expected, gama_ratio(coalesce(p.pairs, 0), t.expected) AS coverage
FROM targets t
JOIN gama_run_judges j ON j.run = t.run
LEFT JOIN calls c ON c.run = t.run AND c.model = t.model AND c.track = t.track AND c.judge = j.judge
LEFT JOIN scored s ON s.run = t.run AND s.model = t.model AND s.track = t.track AND s.judge = j.judge
LEFT JOIN paired p ON p.run = t.run AND p.model = t.model AND p.track = t.track AND p.judge = j.judge;

-- The report's rows: gaps with the stored Wilcoxon / Holm results of the same cell.
CREATE OR REPLACE VIEW gama_report AS
SELECT g.run, g.model, g.judge, g.track, g.metric, g.metric_order, g.label, g.is_percent,
       g.male_mean AS male, g.female_mean AS female, g.gap, g.gap_neutral, t.p_value AS p, t.p_holm, t.statistic,
       t.rank_biserial, t.n_nonzero, t.method, g.pairs, g.expected, g.coverage, g.pairs_neutral, g.pairs_left_out
FROM gama_gaps g
LEFT JOIN gama_gap_tests t USING (run, model, judge, track, metric);
