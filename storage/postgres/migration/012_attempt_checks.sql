-- Charges that reach the provider after their attempt was closed as never
-- charged (the run that made it paused, or its request sat in a stalled
-- network) are found by looking such attempts up again for a day, and
-- voided. The voids stay on the intent, as a JSON array.
ALTER TABLE payment_intents ADD COLUMN voided_charges jsonb NOT NULL DEFAULT '[]';

CREATE TABLE attempt_checks (
    attempt_id        text PRIMARY KEY,
    store_id          text NOT NULL,
    payment_intent_id text NOT NULL,
    merchant_id       text NOT NULL,
    closed_at         timestamptz NOT NULL,
    check_at          timestamptz NOT NULL,
    until             timestamptz NOT NULL,
    checks            integer NOT NULL
);
CREATE INDEX attempt_checks_due ON attempt_checks (check_at);
