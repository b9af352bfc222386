-- The history of delivery attempts: the newest ones of each event (the
-- adapter trims the rest when it records an attempt).
CREATE TABLE delivery_attempts (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT NOT NULL UNIQUE,
    event_id      TEXT NOT NULL REFERENCES events (id),
    store_id      TEXT NOT NULL,
    started_at    INTEGER NOT NULL,
    duration_us   INTEGER NOT NULL,
    status_code   INTEGER NOT NULL,
    failure       TEXT NOT NULL,
    response_body TEXT NOT NULL
) STRICT;
CREATE INDEX delivery_attempts_event_seq ON delivery_attempts (event_id, seq);
