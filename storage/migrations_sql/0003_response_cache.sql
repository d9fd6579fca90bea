-- why: content-addressed response cache (requests.cache_key) and provider drift events
ALTER TABLE requests ADD COLUMN cache_key VARCHAR;
CREATE INDEX requests_cache_key ON requests (cache_key);
CREATE TABLE drift_events (
    run VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    request_id VARCHAR NOT NULL,
    field VARCHAR NOT NULL,
    previous VARCHAR,
    observed VARCHAR,
    detected_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run, model, field, observed)
);
