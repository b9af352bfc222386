-- Card sessions, saved cards and payment intents. Personal data (customer
-- name, email, phone, billing) is kept in its own columns so that it is
-- never part of anything serialised for events.
CREATE TABLE card_sessions (
    id             TEXT PRIMARY KEY,
    store_id       TEXT NOT NULL REFERENCES stores (id),
    client_secret  TEXT NOT NULL,
    customer_id    TEXT NOT NULL,
    customer_name  TEXT NOT NULL,
    customer_email TEXT NOT NULL,
    customer_phone TEXT NOT NULL,
    page_origins   TEXT NOT NULL, -- JSON array of strings
    status         TEXT NOT NULL,
    card_id        TEXT NOT NULL DEFAULT '',
    expires_at     INTEGER NOT NULL,
    created_at     INTEGER NOT NULL
) STRICT;
CREATE INDEX card_sessions_open_expiry ON card_sessions (expires_at) WHERE status = 'open';

CREATE TABLE cards (
    id              TEXT PRIMARY KEY,
    store_id        TEXT NOT NULL REFERENCES stores (id),
    customer_id     TEXT NOT NULL,
    card_session_id TEXT NOT NULL,
    provider_token  TEXT NOT NULL,
    brand           TEXT NOT NULL,
    last4           TEXT NOT NULL,
    exp_month       INTEGER NOT NULL,
    exp_year        INTEGER NOT NULL,
    status          TEXT NOT NULL,
    created_at      INTEGER NOT NULL
) STRICT;

CREATE TABLE payment_intents (
    seq                     INTEGER PRIMARY KEY AUTOINCREMENT,
    id                      TEXT NOT NULL UNIQUE,
    store_id                TEXT NOT NULL REFERENCES stores (id),
    status                  TEXT NOT NULL,
    amount                  INTEGER NOT NULL,
    currency                TEXT NOT NULL,
    customer_id             TEXT NOT NULL,
    customer_name           TEXT NOT NULL,
    customer_email          TEXT NOT NULL,
    customer_phone          TEXT NOT NULL,
    description             TEXT NOT NULL,
    reference               TEXT NOT NULL,
    metadata                TEXT NOT NULL, -- JSON object of strings
    billing_country         TEXT NOT NULL, -- '' when there is no billing
    billing_state           TEXT NOT NULL,
    billing_postal_code     TEXT NOT NULL,
    page_origins            TEXT NOT NULL, -- JSON array of strings
    client_secret           TEXT NOT NULL,
    card_id                 TEXT NOT NULL,
    pm_brand                TEXT NOT NULL, -- '' when there is no payment method
    pm_last4                TEXT NOT NULL,
    pm_exp_month            INTEGER NOT NULL,
    pm_exp_year             INTEGER NOT NULL,
    pm_saved                INTEGER NOT NULL,
    authorization_code      TEXT NOT NULL,
    order_id                TEXT NOT NULL,
    refund_id               TEXT NOT NULL,
    last_error_code         TEXT NOT NULL, -- '' when there is no last error
    last_error_decline_code TEXT NOT NULL,
    last_error_message      TEXT NOT NULL,
    next_action_type        TEXT NOT NULL, -- '' when there is no next action
    next_action_url         TEXT NOT NULL,
    cancellation_reason     TEXT NOT NULL,
    merchant_id             TEXT NOT NULL,
    attempt_id              TEXT NOT NULL,
    attempt_at              INTEGER NOT NULL,
    reconcile_at            INTEGER NOT NULL,
    reconcile_count         INTEGER NOT NULL,
    succeeded_at            INTEGER NOT NULL,
    expires_at              INTEGER NOT NULL,
    created_at              INTEGER NOT NULL,
    updated_at              INTEGER NOT NULL,
    version                 INTEGER NOT NULL
) STRICT;
CREATE INDEX payment_intents_store_seq ON payment_intents (store_id, seq);
CREATE UNIQUE INDEX payment_intents_attempt ON payment_intents (attempt_id) WHERE attempt_id <> '';
CREATE INDEX payment_intents_reconcile_due ON payment_intents (reconcile_at)
    WHERE status IN ('processing', 'requires_action') AND reconcile_at <> 0;
CREATE INDEX payment_intents_expire_due ON payment_intents (expires_at) WHERE status = 'requires_payment_method';
CREATE INDEX payment_intents_status ON payment_intents (status);
