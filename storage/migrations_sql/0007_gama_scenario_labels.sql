-- why: GAMA-Bench scenario plausibility labels per run, for the gap_neutral sensitivity columns
-- One row per scenario a run planned (benchmark 'gama'), written by `fairsweep score` (benchmarks/gama/labels.py)
-- from the run's scenario file; replaced for a run each time it is scored. A label is used only when the
-- file's compiled prompts are the ones the run sent (status 'labelled'); the views count every other
-- scenario as not neutral.
CREATE TABLE gama_scenario_labels (
    run VARCHAR NOT NULL,
    scenario_id VARCHAR NOT NULL,
    plausibility VARCHAR,                    -- neutral / male_leaning / female_leaning; NULL unless status = 'labelled'
    status VARCHAR NOT NULL,                 -- labelled / unlabelled (no label in the file) / changed (the file's
                                             -- text differs from the prompts sent) / missing (not in the file)
    source VARCHAR NOT NULL,                 -- the scenario file, or 'bundled'
    stored_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run, scenario_id)
);
