-- why: the plan table without keyed indexes: their ART nodes stay in memory (~70 MB per million planned requests, never evicted), so a run's memory grew with its plan; each request is planned once by the planner (a resumed plan skips the ids it finds), and the cache joins by hash
DROP INDEX requests_cache_key;
CREATE TABLE requests_unkeyed (
    request_id VARCHAR NOT NULL,
    run VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    benchmark VARCHAR NOT NULL,
    prompt_key VARCHAR NOT NULL,
    prompt_hash VARCHAR NOT NULL,
    sample INTEGER NOT NULL,
    params JSON NOT NULL,
    ordinal INTEGER NOT NULL,
    planned_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    cache_key VARCHAR
);
INSERT INTO requests_unkeyed
SELECT request_id, run, model, benchmark, prompt_key, prompt_hash, sample, params, ordinal, planned_at, cache_key
FROM requests;
DROP TABLE requests;
ALTER TABLE requests_unkeyed RENAME TO requests;
