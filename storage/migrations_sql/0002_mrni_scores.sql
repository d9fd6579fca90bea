-- why: MRNI-BB answer labels (re-runnable parser output) and the Python statistics (bootstrap CIs, binomial tests)

-- One label per stored response. Re-scoring with a new parser version replaces the row (the
-- request_id stays the key), so the table always holds exactly one current label per response.
CREATE TABLE mrni_labels (
    request_id VARCHAR PRIMARY KEY,          -- requests.request_id of the stored response
    label VARCHAR NOT NULL CHECK (label IN ('M', 'W', 'X', 'Y', 'U', 'R', 'O', 'F')),
    span VARCHAR,                            -- the exact substring of the response that decided it (NULL for F)
    parser_version VARCHAR NOT NULL,         -- benchmarks/mrni/parse.py PARSER_VERSION
    scored_at TIMESTAMPTZ NOT NULL
);

-- Cluster-bootstrap percentile intervals, one row per run x model x language x condition x metric.
-- Written by benchmarks/mrni/stats.py (replaced for a run each time the run is scored).
CREATE TABLE mrni_intervals (
    run VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    language VARCHAR NOT NULL,
    condition VARCHAR NOT NULL,              -- 'ambiguous' for the gender-marker effect (ga minus gs)
    metric VARCHAR NOT NULL,                 -- acc_strict, abstention, mar, p_m, s_dis, s_amb, gender_marker_effect
    estimate DOUBLE,                         -- on all answered rows; equals the SQL view's value (NULL: 0 denominator)
    ci_low DOUBLE,                           -- percentile interval over the resamples that define the metric
    ci_high DOUBLE,
    level DOUBLE NOT NULL,                   -- 0.95
    n_clusters INTEGER NOT NULL,             -- item-scenario pairs with at least one answered row
    n_boot INTEGER NOT NULL,                 -- resamples drawn (B)
    n_valid INTEGER NOT NULL,                -- resamples where the metric's denominator was not 0
    seed BIGINT NOT NULL,                    -- base seed (each run x model x language derives its stream from it)
    expected INTEGER NOT NULL,               -- planned requests in the cell
    answered INTEGER NOT NULL,               -- labelled stored responses in the cell
    coverage DOUBLE,                         -- answered / expected
    computed_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run, model, language, condition, metric)
);

-- Two-sided exact binomial test of p_M = n_M / (n_M + n_W) against 0.5, gender-specified conditions.
CREATE TABLE mrni_binomial (
    run VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    language VARCHAR NOT NULL,
    condition VARCHAR NOT NULL,
    n_m INTEGER NOT NULL,
    n_w INTEGER NOT NULL,
    p_m DOUBLE,                              -- NULL when n_m + n_w = 0
    p_value DOUBLE,                          -- scipy.stats.binomtest(n_m, n_m + n_w, 0.5); NULL when n = 0
    expected INTEGER NOT NULL,
    answered INTEGER NOT NULL,
    coverage DOUBLE,
    computed_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run, model, language, condition)
);
