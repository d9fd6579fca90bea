-- why: core run/prompt/request/attempt/response tables
CREATE TABLE runs (
    run VARCHAR PRIMARY KEY,
    identity_hash VARCHAR NOT NULL,
    identity JSON NOT NULL,
    config JSON NOT NULL,
    fairsweep_version VARCHAR NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE TABLE sessions (
    session_id VARCHAR PRIMARY KEY,
    run VARCHAR NOT NULL,
    command VARCHAR NOT NULL,
    pid INTEGER,
    started_at TIMESTAMPTZ NOT NULL
);
CREATE TABLE prompts (
    benchmark VARCHAR NOT NULL,
    prompt_key VARCHAR NOT NULL,
    prompt_hash VARCHAR NOT NULL,
    messages JSON NOT NULL,
    metadata JSON,
    PRIMARY KEY (benchmark, prompt_key, prompt_hash)
);
CREATE TABLE requests (
    request_id VARCHAR PRIMARY KEY,
    run VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    benchmark VARCHAR NOT NULL,
    prompt_key VARCHAR NOT NULL,
    prompt_hash VARCHAR NOT NULL,
    sample INTEGER NOT NULL,
    params JSON NOT NULL,
    ordinal INTEGER NOT NULL,
    planned_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE TABLE attempts (
    attempt_id VARCHAR PRIMARY KEY,
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
CREATE TABLE responses (
    request_id VARCHAR PRIMARY KEY,
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
