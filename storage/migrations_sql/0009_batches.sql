-- why: provider batch jobs (batch mode), recorded before submission so a killed run re-attaches and never re-submits
CREATE TABLE batches (
    batch_id VARCHAR PRIMARY KEY,        -- fairsweep's id, also sent as metadata so an orphan can be found
    run VARCHAR NOT NULL,
    model VARCHAR NOT NULL,              -- the [[models]] / [[judges]] name
    api VARCHAR NOT NULL,                -- openai (Files + Batches) | anthropic (Message Batches)
    api_base VARCHAR,
    provider_batch_id VARCHAR,           -- NULL until the provider accepted the batch
    input_file_id VARCHAR,
    status VARCHAR NOT NULL,             -- preparing, submitted, cancelling (live); completed, expired, cancelled, failed
    provider_status VARCHAR,
    requests INTEGER NOT NULL,
    succeeded INTEGER,
    errored INTEGER,
    unfinished INTEGER,                  -- expired or cancelled before the provider answered them
    price_source VARCHAR,                -- how cost_usd of its answers was priced
    error VARCHAR,
    session_id VARCHAR NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    submitted_at TIMESTAMPTZ,
    ended_at TIMESTAMPTZ
);
CREATE TABLE batch_requests (
    batch_id VARCHAR NOT NULL,
    request_id VARCHAR NOT NULL,
    PRIMARY KEY (batch_id, request_id)
);
