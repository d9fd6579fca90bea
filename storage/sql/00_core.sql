-- Core views over the raw tables. Public interface for ad-hoc queries: see README "Schema".

-- One row per planned request with its outcome: ok (a stored response), failed (a permanent failure
-- stored, e.g. context_length or invalid_output; not sent again unless --retry-failed), or pending
-- (not finished yet: never sent, still failing, or its model stopped).
CREATE OR REPLACE VIEW request_outcomes AS
WITH per_request AS (
    SELECT request_id,
           count(*) AS attempts,
           count(*) FILTER (WHERE outcome = 'rate_limited') AS rate_limited,
           bool_or(outcome = 'permanent') AS permanent,
           arg_max(error_class, started_at) FILTER (WHERE outcome NOT IN ('ok', 'batch')) AS last_error_class
    FROM attempts GROUP BY request_id
)
SELECT r.*,
       CASE WHEN s.request_id IS NOT NULL THEN 'ok'
            WHEN coalesce(a.permanent, false) THEN 'failed'
            ELSE 'pending' END AS status,
       coalesce(a.attempts, 0) AS attempts,
       coalesce(a.rate_limited, 0) AS rate_limited,
       a.last_error_class
FROM requests r
LEFT JOIN responses s USING (request_id)
LEFT JOIN per_request a USING (request_id);

-- One row per (run, model, benchmark, prompt key, sample).
CREATE OR REPLACE VIEW results AS
SELECT o.run, o.model, o.benchmark, o.prompt_key, o.sample, o.status,
       s.text AS response, s.finish_reason, s.latency_ms,
       s.prompt_tokens, s.completion_tokens, s.cost_usd,
       o.attempts, o.last_error_class, o.request_id, o.ordinal
FROM request_outcomes o
LEFT JOIN responses s USING (request_id);

-- Per run and model: progress, failures, retries, 429s, tokens.
CREATE OR REPLACE VIEW run_status AS
SELECT o.run, o.model,
       count(*) AS total,
       count(*) FILTER (WHERE status = 'ok') AS done,
       count(*) FILTER (WHERE status = 'failed') AS failed,
       count(*) FILTER (WHERE status = 'pending') AS pending,
       sum(o.attempts) AS attempts,
       sum(greatest(o.attempts - 1, 0)) AS retries,
       sum(o.rate_limited) AS http_429,
       sum(s.prompt_tokens) AS prompt_tokens,
       sum(s.completion_tokens) AS completion_tokens,
       sum(s.cost_usd) AS cost_usd
FROM request_outcomes o
LEFT JOIN responses s USING (request_id)
GROUP BY o.run, o.model;

-- Failed attempts by class, per run and model.
CREATE OR REPLACE VIEW attempt_errors AS
SELECT r.run, r.model, a.outcome, a.error_class, count(*) AS n
FROM attempts a JOIN requests r USING (request_id)
WHERE a.outcome NOT IN ('ok', 'batch')
GROUP BY ALL;
