-- Events (the outbox) and their deliveries.
CREATE TABLE events (
    seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id         text NOT NULL UNIQUE,
    store_id   text NOT NULL REFERENCES stores (id),
    type       text NOT NULL,
    body       bytea NOT NULL, -- the JSON envelope, byte for byte as sent
    created_at timestamptz NOT NULL
);
CREATE INDEX events_store_seq ON events (store_id, seq);
CREATE INDEX events_store_type_seq ON events (store_id, type, seq);

CREATE TABLE deliveries (
    event_id         text PRIMARY KEY REFERENCES events (id),
    store_id         text NOT NULL,
    status           text NOT NULL,
    attempts         integer NOT NULL DEFAULT 0,
    last_attempt_at  timestamptz NOT NULL DEFAULT '-infinity',
    next_attempt_at  timestamptz NOT NULL DEFAULT '-infinity',
    last_status_code integer NOT NULL DEFAULT 0,
    last_failure     text NOT NULL DEFAULT '',
    lease_token      text NOT NULL DEFAULT '',
    lease_until      timestamptz NOT NULL DEFAULT '-infinity'
);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at, event_id) WHERE status = 'pending';
CREATE INDEX deliveries_leased ON deliveries (store_id, lease_until) WHERE lease_token <> '' AND status = 'pending';
CREATE INDEX deliveries_status ON deliveries (status);
