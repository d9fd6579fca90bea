-- why: GAMA-Bench evaluation: parsed judge outputs, lexicon scores, gap tests, judge agreement, human validation labels

-- One row per valid stored judge answer (benchmark 'gama-judge'), parsed by benchmarks/gama/score.py.
-- Replaced for a target run each time it is scored; only answers to the current judge prompt version.
CREATE TABLE gama_judgements (
    judge_request_id VARCHAR PRIMARY KEY,    -- requests.request_id of the judge call
    run VARCHAR NOT NULL,                    -- the target run
    judge_run VARCHAR NOT NULL,              -- the engine run holding the judge's requests
    judge VARCHAR NOT NULL,                  -- the [[judges]] name
    judge_prompt_version VARCHAR NOT NULL,
    judge_sample INTEGER NOT NULL,
    target_request_id VARCHAR NOT NULL,      -- requests.request_id of the judged target response
    words INTEGER NOT NULL,                  -- words in the judged response (lexicon_scorer.count_words)
    punitive_count INTEGER NOT NULL,
    therapeutic_count INTEGER NOT NULL,
    severity INTEGER NOT NULL,               -- 0..4, scale in judge.SEVERITY_SCALE
    empathy_with_aggressor BOOLEAN NOT NULL,
    instructional_or_accusatory BOOLEAN NOT NULL,
    full_blame_on_narrator BOOLEAN NOT NULL,
    punitive_phrases JSON NOT NULL,
    therapeutic_phrases JSON NOT NULL,
    rationale VARCHAR NOT NULL,
    scored_at TIMESTAMPTZ NOT NULL
);

-- The deterministic lexicon scorer over every stored target response (judge-independent check).
CREATE TABLE gama_lexicon_scores (
    target_request_id VARCHAR NOT NULL,
    lexicon_version VARCHAR NOT NULL,
    run VARCHAR NOT NULL,
    words INTEGER NOT NULL,
    punitive_count INTEGER NOT NULL,
    therapeutic_count INTEGER NOT NULL,
    punitive_matches JSON NOT NULL,
    therapeutic_matches JSON NOT NULL,
    scored_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (target_request_id, lexicon_version)
);

-- Wilcoxon signed-rank test of the paired differences per run x model x judge x track x metric
-- (stats.py states the zero handling). p_holm: Holm over the run x judge family of the six
-- primary metrics x models x tracks; NULL for the per-100-word metrics (descriptive, outside the family).
CREATE TABLE gama_gap_tests (
    run VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    judge VARCHAR NOT NULL,                  -- a [[judges]] name, or 'lexicon'
    track VARCHAR NOT NULL,
    metric VARCHAR NOT NULL,
    n_pairs INTEGER NOT NULL,
    n_nonzero INTEGER NOT NULL,
    male_mean DOUBLE,
    female_mean DOUBLE,
    gap DOUBLE,                              -- mean(female - male); percentage points for % metrics
    statistic DOUBLE,                        -- min(W+, W-)
    w_plus DOUBLE,
    w_minus DOUBLE,
    p_value DOUBLE,                          -- two-sided; NULL when every difference is 0
    rank_biserial DOUBLE,
    method VARCHAR,                          -- exact / asymptotic
    zero_method VARCHAR NOT NULL,            -- 'wilcox': zero differences dropped
    holm_family_size INTEGER,
    p_holm DOUBLE,
    computed_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run, model, judge, track, metric)
);

-- Judge robustness: two judges' gaps over the same model x track x metric cells of a run.
CREATE TABLE gama_judge_agreement (
    run VARCHAR NOT NULL,
    judge_a VARCHAR NOT NULL,
    judge_b VARCHAR NOT NULL,
    metric VARCHAR NOT NULL,                 -- 'all' or one metric
    n_cells INTEGER NOT NULL,
    direction_agreement DOUBLE,
    pearson_r DOUBLE,
    mad DOUBLE,
    computed_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run, judge_a, judge_b, metric)
);

-- Lexicon scorer versus each judge, response by response (punitive and therapeutic counts).
CREATE TABLE gama_lexicon_agreement (
    run VARCHAR NOT NULL,
    judge VARCHAR NOT NULL,
    metric VARCHAR NOT NULL,                 -- puni / ther
    n_responses INTEGER NOT NULL,
    pearson_r DOUBLE,
    mad DOUBLE,
    lexicon_version VARCHAR NOT NULL,
    computed_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run, judge, metric)
);

-- Human validation: one A/B/Tie label per blinded pair, annotator and framing dimension.
CREATE TABLE gama_validation_labels (
    run VARCHAR NOT NULL,
    pair_id VARCHAR NOT NULL,
    annotator VARCHAR NOT NULL,
    dimension VARCHAR NOT NULL,              -- punitive / therapeutic / instructional / full_blame
    label VARCHAR NOT NULL CHECK (label IN ('A', 'B', 'Tie')),
    favoured_gender VARCHAR NOT NULL,        -- the actor gender of the response labelled (female / male / tie)
    model VARCHAR NOT NULL,
    scenario_id VARCHAR NOT NULL,
    a_request_id VARCHAR NOT NULL,
    b_request_id VARCHAR NOT NULL,
    imported_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (pair_id, annotator, dimension)
);
