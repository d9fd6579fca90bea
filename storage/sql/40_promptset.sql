-- Prompt-set views (benchmarks/promptset; README "Your own benchmark"). Same counting rule as MRNI-BB:
-- expected = planned requests; answered = stored responses with a label; coverage = answered / expected.
-- Refusals, hedges and unparsed answers ARE answers (accuracy counts them as wrong); pending and failed
-- requests only lower coverage. A group '(all)' holds every row; an item with several group labels is in each.

CREATE OR REPLACE MACRO promptset_ratio(num, den) AS num::DOUBLE / NULLIF(den, 0);

-- One row per planned request of a prompt set: the item's fields, status, response and label. `code` is what
-- rates and flips compare: the chosen option's letter (A = the first choice), a free answer's normalised
-- text, or refusal / hedge / unparsed.
CREATE OR REPLACE VIEW promptset_scored AS
WITH items AS (
    SELECT benchmark, prompt_key, prompt_hash,
           json_extract_string(metadata, '$.promptset.item') AS item,
           json_extract_string(metadata, '$.promptset.pair') AS pair,
           json_extract_string(metadata, '$.promptset.variant') AS variant,
           CAST(json_extract_string(metadata, '$.promptset.groups[*]') AS VARCHAR[]) AS groups,
           coalesce(json_type(metadata, '$.promptset.answer'), 'NULL') <> 'NULL'
               OR coalesce(json_type(metadata, '$.promptset.target'), 'NULL') <> 'NULL' AS has_gold
    FROM prompts
    WHERE json_exists(metadata, '$.promptset')
)
SELECT o.run, o.model, o.benchmark, o.prompt_key, o.sample, o.request_id, o.status,
       i.item, i.pair, i.variant, i.groups, coalesce(i.pair, i.item) AS cluster, i.has_gold,
       o.response, l.kind, l.label, l.choice, l.value, l.correct, l.parser_version,
       CASE WHEN l.kind = 'choice' THEN chr(65 + l.choice) WHEN l.kind = 'answer' THEN l.label ELSE l.kind END
           AS code,
       (o.status = 'ok' AND l.kind IS NOT NULL) AS answered
FROM request_status o
JOIN items i USING (benchmark, prompt_key, prompt_hash)
LEFT JOIN promptset_labels l USING (request_id);

-- promptset_scored once per group label, and once in '(all)'.
CREATE OR REPLACE VIEW promptset_grouped AS
SELECT *, '(all)' AS grp FROM promptset_scored
UNION ALL
SELECT * EXCLUDE (g), g AS grp FROM (SELECT *, unnest(groups) AS g FROM promptset_scored);

-- Per run, model, set and group: coverage, accuracy, refusal / hedge / unparsed rates.
CREATE OR REPLACE VIEW promptset_metrics AS
SELECT run, model, benchmark, grp,
       count(DISTINCT item) AS n_items,
       count(DISTINCT cluster) AS n_clusters,
       count(*) AS expected,
       count(*) FILTER (WHERE answered) AS answered,
       promptset_ratio(count(*) FILTER (WHERE answered), count(*)) AS coverage,
       promptset_ratio(count(*) FILTER (WHERE answered AND correct), count(*) FILTER (WHERE answered AND has_gold))
           AS accuracy,
       promptset_ratio(count(*) FILTER (WHERE kind = 'refusal' AND answered), count(*) FILTER (WHERE answered))
           AS refusal_rate,
       promptset_ratio(count(*) FILTER (WHERE kind = 'hedge' AND answered), count(*) FILTER (WHERE answered))
           AS hedge_rate,
       promptset_ratio(count(*) FILTER (WHERE kind = 'unparsed' AND answered), count(*) FILTER (WHERE answered))
           AS unparsed_rate,
       avg(value) FILTER (WHERE answered) AS mean_value,
       string_agg(DISTINCT parser_version, ',') AS parser_versions
FROM promptset_grouped
GROUP BY ALL;

-- Per run, model, set, group and code (an option's letter, a free answer, or refusal / hedge / unparsed):
-- its share of the answers.
CREATE OR REPLACE VIEW promptset_choice_rates AS
SELECT g.run, g.model, g.benchmark, g.grp, g.code AS choice, count(*) AS n,
       any_value(m.answered) AS answered, promptset_ratio(count(*), any_value(m.answered)) AS rate
FROM promptset_grouped g
JOIN promptset_metrics m USING (run, model, benchmark, grp)
WHERE g.answered
GROUP BY ALL;

-- Per variant of the pairs: the same metrics by variant.
CREATE OR REPLACE VIEW promptset_variant_metrics AS
SELECT run, model, benchmark, grp, variant,
       count(*) AS expected,
       count(*) FILTER (WHERE answered) AS answered,
       promptset_ratio(count(*) FILTER (WHERE answered), count(*)) AS coverage,
       promptset_ratio(count(*) FILTER (WHERE answered AND correct), count(*) FILTER (WHERE answered AND has_gold))
           AS accuracy,
       promptset_ratio(count(*) FILTER (WHERE kind = 'refusal' AND answered), count(*) FILTER (WHERE answered))
           AS refusal_rate,
       promptset_ratio(count(*) FILTER (WHERE kind = 'hedge' AND answered), count(*) FILTER (WHERE answered))
           AS hedge_rate,
       promptset_ratio(count(*) FILTER (WHERE kind = 'unparsed' AND answered), count(*) FILTER (WHERE answered))
           AS unparsed_rate,
       avg(value) FILTER (WHERE answered) AS mean_value
FROM promptset_grouped
WHERE variant IS NOT NULL
GROUP BY ALL;

CREATE OR REPLACE VIEW promptset_variant_choice_rates AS
SELECT g.run, g.model, g.benchmark, g.grp, g.variant, g.code AS choice, count(*) AS n,
       any_value(m.answered) AS answered, promptset_ratio(count(*), any_value(m.answered)) AS rate
FROM promptset_grouped g
JOIN promptset_variant_metrics m USING (run, model, benchmark, grp, variant)
WHERE g.answered
GROUP BY ALL;

-- One row per pair, sample and contrast (reference variant a = the first in sort order, against each
-- other variant b) with both variants answered.
CREATE OR REPLACE VIEW promptset_pair_cells AS
WITH answered AS (SELECT * FROM promptset_grouped WHERE answered AND pair IS NOT NULL),
reference AS (SELECT benchmark, min(variant) AS variant_a FROM promptset_scored WHERE pair IS NOT NULL
              GROUP BY benchmark)
SELECT a.run, a.model, a.benchmark, a.grp, a.pair, a.sample, a.variant AS variant_a, b.variant AS variant_b,
       a.code AS label_a, b.code AS label_b, a.kind AS kind_a, b.kind AS kind_b,
       a.correct AS correct_a, b.correct AS correct_b, a.value AS value_a, b.value AS value_b
FROM answered a
JOIN reference r ON r.benchmark = a.benchmark AND r.variant_a = a.variant
JOIN answered b ON b.run = a.run AND b.model = a.model AND b.benchmark = a.benchmark AND b.grp = a.grp
               AND b.pair = a.pair AND b.sample = a.sample AND b.variant <> a.variant;

-- Per contrast: complete pairs, the flip rate (share of pairs whose labels differ), accuracy by variant,
-- its paired difference and McNemar's discordant counts.
CREATE OR REPLACE VIEW promptset_flips AS
SELECT run, model, benchmark, grp, variant_a, variant_b,
       count(*) AS n_pairs,
       promptset_ratio(count(*) FILTER (WHERE label_a IS DISTINCT FROM label_b), count(*)) AS flip_rate,
       avg(CAST(correct_a AS INTEGER)) AS accuracy_a,
       avg(CAST(correct_b AS INTEGER)) AS accuracy_b,
       avg(CAST(correct_b AS INTEGER)) - avg(CAST(correct_a AS INTEGER)) AS accuracy_diff,
       count(*) FILTER (WHERE correct_a AND NOT correct_b) AS n_correct_a_only,
       count(*) FILTER (WHERE correct_b AND NOT correct_a) AS n_correct_b_only
FROM promptset_pair_cells
GROUP BY ALL;
