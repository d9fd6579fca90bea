-- Core views over the raw tables. Public interface for ad-hoc queries: see README "Schema".

-- How these views stay quick on a DB of a million requests: a WHERE on run (or model, benchmark) must
-- reach the requests scan before anything is aggregated, so that one run's rows are read, not every
-- run's. request_status has no aggregate at all; request_outcomes aggregates the attempts grouped by
-- every request column, so such a WHERE is a filter on a grouping key, which DuckDB pushes down (an
-- aggregate over all attempts, joined to the requests afterwards, is computed whole before any filter).
-- run_status needs only two counts per request: there that aggregate is the cheaper plan for all runs, and
-- as quick as the other for one (measured on bench/million.py's DB).

-- One row per planned request with its status and, once answered, its stored response. Status: ok (a
-- stored response), failed (a permanent failure stored, e.g. context_length or invalid_output; not sent
-- again unless --retry-failed), or pending (not finished yet: never sent, still failing, or its model
-- stopped).
CREATE OR REPLACE VIEW request_status AS
SELECT r.*,
       CASE WHEN s.request_id IS NOT NULL THEN 'ok'
            WHEN f.request_id IS NOT NULL THEN 'failed'
            ELSE 'pending' END AS status,
       s.text AS response, s.finish_reason, s.latency_ms, s.prompt_tokens, s.completion_tokens, s.cost_usd
FROM requests r
LEFT JOIN responses s USING (request_id)
LEFT JOIN (SELECT DISTINCT request_id FROM attempts WHERE outcome = 'permanent') f USING (request_id);

-- One row per planned request: its status and attempts (how many, how many rate-limited, the last error).
CREATE OR REPLACE VIEW request_outcomes AS
SELECT o.* EXCLUDE (response, finish_reason, latency_ms, prompt_tokens, completion_tokens, cost_usd),
       count(x.request_id) AS attempts,
       count(x.request_id) FILTER (WHERE x.outcome = 'rate_limited') AS rate_limited,
       arg_max(x.error_class, x.started_at) FILTER (WHERE x.outcome NOT IN ('ok', 'batch')) AS last_error_class
FROM request_status o
LEFT JOIN attempts x USING (request_id)
GROUP BY ALL;

-- One row per (run, model, benchmark, prompt key, sample).
CREATE OR REPLACE VIEW results AS
SELECT o.run, o.model, o.benchmark, o.prompt_key, o.sample, o.status,
       s.text AS response, s.finish_reason, s.latency_ms,
       s.prompt_tokens, s.completion_tokens, s.cost_usd,
       o.attempts, o.last_error_class, o.request_id, o.ordinal
FROM request_outcomes o
LEFT JOIN responses s USING (request_id);

-- Per run and model: progress, failures, retries, 429s, tokens. retries = attempts beyond the first of
-- each request.
CREATE OR REPLACE VIEW run_status AS
WITH per_request AS (
    SELECT request_id, count(*) AS attempts, count(*) FILTER (WHERE outcome = 'rate_limited') AS rate_limited
    FROM attempts GROUP BY request_id
)
SELECT o.run, o.model,
       count(*) AS total,
       count(*) FILTER (WHERE o.status = 'ok') AS done,
       count(*) FILTER (WHERE o.status = 'failed') AS failed,
       count(*) FILTER (WHERE o.status = 'pending') AS pending,
       CAST(coalesce(sum(a.attempts), 0) AS HUGEINT) AS attempts,
       CAST(coalesce(sum(a.attempts - 1), 0) AS HUGEINT) AS retries,
       CAST(coalesce(sum(a.rate_limited), 0) AS HUGEINT) AS http_429,
       sum(o.prompt_tokens) AS prompt_tokens,
       sum(o.completion_tokens) AS completion_tokens,
       sum(o.cost_usd) AS cost_usd
FROM request_status o
LEFT JOIN per_request a USING (request_id)
GROUP BY o.run, o.model;

-- Failed attempts by class, per run and model.
CREATE OR REPLACE VIEW attempt_errors AS
SELECT r.run, r.model, a.outcome, a.error_class, count(*) AS n
FROM attempts a JOIN requests r USING (request_id)
WHERE a.outcome NOT IN ('ok', 'batch')
GROUP BY ALL;
