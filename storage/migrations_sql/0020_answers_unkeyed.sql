-- why: attempts, responses and mrni_labels without keyed indexes: their ART nodes stay in memory (~70 bytes per key, three keys per answer, ~20 MB at 94,080 answers, never evicted), so a run's memory grew with its answers; storage/bulk.py keeps each key once (rows already stored are skipped), and a new label replaces the old one by delete and insert
CREATE TABLE attempts_unkeyed (
    attempt_id VARCHAR NOT NULL,
    request_id VARCHAR NOT NULL,
    session_id VARCHAR NOT NULL,
    attempt_no INTEGER NOT NULL,
    started_at TIMESTAMPTZ NOT NULL,
    latency_ms DOUBLE,
    outcome VARCHAR NOT NULL,
    error_class VARCHAR,
    http_status INTEGER,
    retry_after_s DOUBLE,
    error_message VARCHAR,
    prompt_tokens INTEGER,
    completion_tokens INTEGER
);
INSERT INTO attempts_unkeyed SELECT attempt_id, request_id, session_id, attempt_no, started_at, latency_ms, outcome,
    error_class, http_status, retry_after_s, error_message, prompt_tokens, completion_tokens FROM attempts;
DROP TABLE attempts;
ALTER TABLE attempts_unkeyed RENAME TO attempts;
CREATE TABLE responses_unkeyed (
    request_id VARCHAR NOT NULL,
    attempt_id VARCHAR NOT NULL,
    text VARCHAR NOT NULL,
    finish_reason VARCHAR,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    cost_usd DOUBLE,
    provider_model VARCHAR,
    system_fingerprint VARCHAR,
    latency_ms DOUBLE,
    received_at TIMESTAMPTZ NOT NULL
);
INSERT INTO responses_unkeyed SELECT request_id, attempt_id, text, finish_reason, prompt_tokens, completion_tokens,
    cost_usd, provider_model, system_fingerprint, latency_ms, received_at FROM responses;
DROP TABLE responses;
ALTER TABLE responses_unkeyed RENAME TO responses;
CREATE TABLE mrni_labels_unkeyed (
    request_id VARCHAR NOT NULL,
    label VARCHAR NOT NULL CHECK (label IN ('M', 'W', 'X', 'Y', 'U', 'R', 'O', 'F')),
    span VARCHAR,
    parser_version VARCHAR NOT NULL,
    scored_at TIMESTAMPTZ NOT NULL
);
INSERT INTO mrni_labels_unkeyed SELECT request_id, label, span, parser_version, scored_at FROM mrni_labels;
DROP TABLE mrni_labels;
ALTER TABLE mrni_labels_unkeyed RENAME TO mrni_labels;
