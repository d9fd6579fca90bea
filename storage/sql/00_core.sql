-- Core views over the raw tables. Public interface for ad-hoc queries: see README "Schema".

-- How these views stay quick on a DB of a million requests: a WHERE on run (or model, benchmark) must
-- reach the requests scan before anything is aggregated, so that one run's rows are read, not every
-- run's. request_status has no aggregate at all; request_outcomes aggregates the attempts grouped by
-- every request column, so such a WHERE is a filter on a grouping key, which DuckDB pushes down (an
-- aggregate over all attempts, joined to the requests afterwards, is computed whole before any filter);
-- run_status counts per run and model without any per-request aggregate.

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
       arg_max(x.error_class, x.started_at) FILTER (WHERE x.outcome <> 'ok') AS last_error_class
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

-- Per run and model: progress, failures, retries, 429s, tokens.
-- retries = attempts beyond the first of each request = attempts - requests tried.
CREATE OR REPLACE VIEW run_status AS
WITH per_request AS (
    SELECT run, model,
           count(*) AS total,
           count(*) FILTER (WHERE status = 'ok') AS done,
           count(*) FILTER (WHERE status = 'failed') AS failed,
           count(*) FILTER (WHERE status = 'pending') AS pending,
           sum(prompt_tokens) AS prompt_tokens,
           sum(completion_tokens) AS completion_tokens,
           sum(cost_usd) AS cost_usd
    FROM request_status
    GROUP BY run, model
), per_attempt AS (
    SELECT r.run, r.model,
           count(*) AS attempts,
           count(DISTINCT x.request_id) AS tried,
           count(*) FILTER (WHERE x.outcome = 'rate_limited') AS http_429
    FROM attempts x
    JOIN requests r USING (request_id)
    GROUP BY r.run, r.model
)
SELECT run, model, total, done, failed, pending,
       CAST(coalesce(attempts, 0) AS HUGEINT) AS attempts,
       CAST(coalesce(attempts - tried, 0) AS HUGEINT) AS retries,
       CAST(coalesce(http_429, 0) AS HUGEINT) AS http_429,
       prompt_tokens, completion_tokens, cost_usd
FROM per_request
LEFT JOIN per_attempt USING (run, model);

-- Failed attempts by class, per run and model.
CREATE OR REPLACE VIEW attempt_errors AS
SELECT r.run, r.model, a.outcome, a.error_class, count(*) AS n
FROM attempts a JOIN requests r USING (request_id)
WHERE a.outcome <> 'ok'
GROUP BY ALL;
