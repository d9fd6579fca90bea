-- why: mrni-likert agreement probe: one parsed label (rating / refusal / unparsed) per stored response
CREATE TABLE mrni_likert_labels (
    request_id VARCHAR PRIMARY KEY,
    label VARCHAR NOT NULL CHECK (label IN ('rating', 'refusal', 'unparsed')),
    rating INTEGER CHECK ((label = 'rating') = (rating IS NOT NULL)),
    span VARCHAR,
    parser_version VARCHAR NOT NULL,
    scored_at TIMESTAMPTZ NOT NULL
);
