-- why: prompt sets (a user's own benchmark from a file): answer labels and the Python statistics (bootstrap intervals, exact paired tests)

-- One label per stored response of a prompt set (benchmarks/promptset/parsers.py); re-scoring with a new
-- parser version replaces the row.
CREATE TABLE promptset_labels (
    request_id VARCHAR PRIMARY KEY,
    benchmark VARCHAR NOT NULL,               -- the set's name
    kind VARCHAR NOT NULL CHECK (kind IN ('choice', 'answer', 'hedge', 'refusal', 'unparsed')),
    label VARCHAR NOT NULL,                   -- the chosen option's text, the normalised answer, or the kind
    choice INTEGER,                           -- index of the chosen option (choice parsers)
    value DOUBLE,                             -- the answer as a number, when it is one
    correct BOOLEAN,                          -- NULL: the item has no gold answer
    span VARCHAR,                             -- the substring of the response that decided it
    parser_version VARCHAR NOT NULL,
    scored_at TIMESTAMPTZ NOT NULL
);

-- Cluster-bootstrap percentile intervals (clusters: pairs, else items), per run x model x set x group x metric.
CREATE TABLE promptset_intervals (
    run VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    benchmark VARCHAR NOT NULL,
    grp VARCHAR NOT NULL,                     -- '(all)' or a group label
    metric VARCHAR NOT NULL,                  -- accuracy, or choice:<option text>
    estimate DOUBLE,
    ci_low DOUBLE,
    ci_high DOUBLE,
    level DOUBLE NOT NULL,
    n_clusters INTEGER NOT NULL,
    n_boot INTEGER NOT NULL,
    n_valid INTEGER NOT NULL,
    seed BIGINT NOT NULL,
    computed_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run, model, benchmark, grp, metric)
);

-- Paired tests between two variants of the pairs: one row per outcome (a family), Holm-adjusted per
-- run x model x set x group.
CREATE TABLE promptset_paired_tests (
    run VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    benchmark VARCHAR NOT NULL,
    grp VARCHAR NOT NULL,
    outcome VARCHAR NOT NULL,                 -- correct, choice:<option text>, value
    variant_a VARCHAR NOT NULL,               -- the reference variant (the first in sort order)
    variant_b VARCHAR NOT NULL,
    n_pairs INTEGER NOT NULL,                 -- pairs with both variants answered
    mean_a DOUBLE,
    mean_b DOUBLE,
    diff DOUBLE,                              -- mean_b - mean_a
    ci_low DOUBLE,                            -- cluster bootstrap over pairs
    ci_high DOUBLE,
    test VARCHAR,                             -- mcnemar_exact, wilcoxon_exact, wilcoxon_asymptotic
    n_a_only INTEGER,                         -- McNemar: pairs with the outcome in a only
    n_b_only INTEGER,                         -- ... in b only
    statistic DOUBLE,                         -- Wilcoxon: min(W+, W-)
    p_value DOUBLE,
    p_holm DOUBLE,
    n_boot INTEGER NOT NULL,
    seed BIGINT NOT NULL,
    computed_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run, model, benchmark, grp, outcome, variant_a, variant_b)
);
