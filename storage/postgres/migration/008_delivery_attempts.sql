-- The history of delivery attempts: the newest ones of each event (the
-- adapter trims the rest when it records an attempt).
CREATE TABLE delivery_attempts (
    seq           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id            text NOT NULL UNIQUE,
    event_id      text NOT NULL REFERENCES events (id),
    store_id      text NOT NULL,
    started_at    timestamptz NOT NULL,
    duration_us   bigint NOT NULL,
    status_code   integer NOT NULL,
    failure       text NOT NULL,
    response_body text NOT NULL
);
CREATE INDEX delivery_attempts_event_seq ON delivery_attempts (event_id, seq);
