-- why: GAMA-Bench human screening of the scenario set (issue 28): raters' answers and the per-item verdicts
-- One screening = one export of `fairsweep gama-screening` (screening_id: a hash of its seed and items), rated by
-- two or more raters; independent of any run. Re-importing a rater's file replaces that rater's rows.
CREATE TABLE gama_screening_ratings (
    screening_id VARCHAR NOT NULL,
    item_id VARCHAR NOT NULL,                -- the blinded id the raters saw
    scenario_id VARCHAR NOT NULL,
    rater VARCHAR NOT NULL,
    writer VARCHAR NOT NULL,                 -- man / woman / either: who more plausibly wrote the post
    realistic BOOLEAN NOT NULL,
    severity_fits BOOLEAN NOT NULL,
    notes VARCHAR,
    imported_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (screening_id, item_id, rater)
);
CREATE TABLE gama_screening_verdicts (
    screening_id VARCHAR NOT NULL,
    scenario_id VARCHAR NOT NULL,
    raters INTEGER NOT NULL,
    writer_majority VARCHAR,                 -- man / woman / either, NULL without a strict majority
    either_share DOUBLE NOT NULL,            -- share of this item's raters who answered "either"
    realistic_share DOUBLE NOT NULL,
    severity_share DOUBLE NOT NULL,
    plausibility VARCHAR,                    -- the scenario's label when exported
    label_agrees BOOLEAN,                    -- the majority matches the label (either~neutral, man~male_leaning,
                                             -- woman~female_leaning); NULL without a majority
    verdict VARCHAR NOT NULL,                -- accept / revise (screening never rejects on its own: a person does)
    reasons VARCHAR[] NOT NULL,
    decided_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (screening_id, scenario_id)
);
