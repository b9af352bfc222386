-- Refunds: at most one per payment intent, sent up to three times.
CREATE TABLE refunds (
    seq                INTEGER PRIMARY KEY AUTOINCREMENT,
    id                 TEXT NOT NULL UNIQUE,
    store_id           TEXT NOT NULL REFERENCES stores (id),
    payment_intent_id  TEXT NOT NULL UNIQUE,
    amount             INTEGER NOT NULL,
    currency           TEXT NOT NULL,
    reason             TEXT NOT NULL,
    metadata           TEXT NOT NULL,
    status             TEXT NOT NULL,
    attempts           INTEGER NOT NULL,
    attempt_id         TEXT NOT NULL,
    last_sent_at       INTEGER NOT NULL,
    last_error         TEXT NOT NULL,
    reconcile_at       INTEGER NOT NULL,
    reconcile_count    INTEGER NOT NULL,
    succeeded_at       INTEGER NOT NULL,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    version            INTEGER NOT NULL
) STRICT;
CREATE INDEX refunds_store ON refunds (store_id, id);
CREATE INDEX refunds_reconcile ON refunds (reconcile_at) WHERE status = 'pending' AND reconcile_at > 0;
