-- Refunds: at most one per payment intent, sent up to three times.
CREATE TABLE refunds (
    seq               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id                text NOT NULL UNIQUE,
    store_id          text NOT NULL REFERENCES stores (id),
    payment_intent_id text NOT NULL UNIQUE,
    amount            bigint NOT NULL,
    currency          text NOT NULL,
    reason            text NOT NULL,
    metadata          jsonb NOT NULL, -- object of strings
    status            text NOT NULL,
    attempts          integer NOT NULL,
    attempt_id        text NOT NULL,
    last_sent_at      timestamptz NOT NULL,
    last_error        jsonb, -- NULL when there is none
    reconcile_at      timestamptz NOT NULL,
    reconcile_count   integer NOT NULL,
    succeeded_at      timestamptz NOT NULL,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    version           bigint NOT NULL
);
CREATE INDEX refunds_reconcile ON refunds (reconcile_at, seq) WHERE status = 'pending' AND reconcile_at <> '-infinity';
