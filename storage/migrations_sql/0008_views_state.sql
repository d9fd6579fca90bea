-- why: the SQL views and macros are recreated only when their definitions changed (start-up time)
CREATE TABLE views_state (
    sql_hash VARCHAR NOT NULL,               -- sha256 of every storage/sql file, in name order
    refreshed_at TIMESTAMPTZ NOT NULL
);
