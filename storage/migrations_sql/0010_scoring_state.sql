-- why: incremental scoring: what each benchmark's statistics tables of a run (and model) were last computed from

-- One row per statistics cell a scorer keeps (MRNI-BB: run x model; GAMA-Bench: run, model ''). `inputs`
-- fingerprints everything the statistics depend on (planned requests, labels and their newest scored_at,
-- settings such as the bootstrap size and seed, the statistics code version); a scorer recomputes a cell
-- only when its fingerprint changed, so scoring after a resume that added nothing recomputes nothing.
CREATE TABLE scoring_state (
    benchmark VARCHAR NOT NULL,
    run VARCHAR NOT NULL,
    model VARCHAR NOT NULL,                  -- '' when the statistics cover every model of the run
    inputs VARCHAR NOT NULL,
    computed_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (benchmark, run, model)
);
