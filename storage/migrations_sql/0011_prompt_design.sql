-- why: the MRNI-BB views read each prompt's design fields as columns, not by parsing its JSON at every query
-- (JSON extraction in DuckDB cost ~70 MB of peak memory per scoring pass of a 4,704-prompt run)

-- The design fields of every MRNI-BB prompt, as the text json_extract_string gives for them (casts stay in
-- the views), written with the prompt when it is planned (storage/design.py). A prompt without a row here
-- (stored by an older fairsweep) is read from its JSON by the views instead.
CREATE TABLE mrni_design (
    benchmark VARCHAR NOT NULL,
    prompt_key VARCHAR NOT NULL,
    prompt_hash VARCHAR NOT NULL,
    language VARCHAR,
    subscale VARCHAR,
    category VARCHAR,
    item VARCHAR,
    scenario VARCHAR,
    condition VARCHAR,
    mapping VARCHAR,
    gold_answer VARCHAR,
    PRIMARY KEY (benchmark, prompt_key, prompt_hash)
);
