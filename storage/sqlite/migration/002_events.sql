-- Events (the outbox) and their deliveries.
CREATE TABLE events (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT NOT NULL UNIQUE,
    store_id   TEXT NOT NULL REFERENCES stores (id),
    type       TEXT NOT NULL,
    body       BLOB NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX events_store_seq ON events (store_id, seq);
CREATE INDEX events_store_type_seq ON events (store_id, type, seq);

CREATE TABLE deliveries (
    event_id         TEXT PRIMARY KEY REFERENCES events (id),
    store_id         TEXT NOT NULL,
    status           TEXT NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_attempt_at  INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  INTEGER NOT NULL DEFAULT 0,
    last_status_code INTEGER NOT NULL DEFAULT 0,
    last_failure     TEXT NOT NULL DEFAULT '',
    lease_token      TEXT NOT NULL DEFAULT '',
    lease_until      INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX deliveries_due ON deliveries (next_attempt_at, event_id) WHERE status = 'pending';
CREATE INDEX deliveries_leased ON deliveries (lease_token, store_id) WHERE lease_token <> '';
CREATE INDEX deliveries_status ON deliveries (status);
