-- Charges that reach the provider after their attempt was closed as never
-- charged (the run that made it paused, or its request sat in a stalled
-- network) are found by looking such attempts up again for a day, and
-- voided. The voids stay on the intent, as a JSON array.
ALTER TABLE payment_intents ADD COLUMN voided_charges TEXT NOT NULL DEFAULT '[]';

CREATE TABLE attempt_checks (
    attempt_id        TEXT PRIMARY KEY,
    store_id          TEXT NOT NULL,
    payment_intent_id TEXT NOT NULL,
    merchant_id       TEXT NOT NULL,
    closed_at         INTEGER NOT NULL,
    check_at          INTEGER NOT NULL,
    until             INTEGER NOT NULL,
    checks            INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX attempt_checks_due ON attempt_checks (check_at);
