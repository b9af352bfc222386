-- Card sessions, saved cards and payment intents. Personal data (customer
-- name, email, phone, billing) is kept in its own columns so that it is
-- never part of anything serialised for events. An optional part of an
-- intent (billing, payment method, last error, next action) is absent when
-- its first column is ''.
CREATE TABLE card_sessions (
    id             text PRIMARY KEY,
    store_id       text NOT NULL REFERENCES stores (id),
    client_secret  text NOT NULL,
    customer_id    text NOT NULL,
    customer_name  text NOT NULL,
    customer_email text NOT NULL,
    customer_phone text NOT NULL,
    page_origins   text[] NOT NULL,
    status         text NOT NULL,
    card_id        text NOT NULL DEFAULT '',
    expires_at     timestamptz NOT NULL,
    created_at     timestamptz NOT NULL
);
CREATE INDEX card_sessions_open_expiry ON card_sessions (expires_at) WHERE status = 'open';

CREATE TABLE cards (
    id              text PRIMARY KEY,
    store_id        text NOT NULL REFERENCES stores (id),
    customer_id     text NOT NULL,
    card_session_id text NOT NULL,
    provider_token  text NOT NULL,
    brand           text NOT NULL,
    last4           text NOT NULL,
    exp_month       integer NOT NULL,
    exp_year        integer NOT NULL,
    status          text NOT NULL,
    created_at      timestamptz NOT NULL
);

CREATE TABLE payment_intents (
    seq                     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id                      text NOT NULL UNIQUE,
    store_id                text NOT NULL REFERENCES stores (id),
    status                  text NOT NULL,
    amount                  bigint NOT NULL,
    currency                text NOT NULL,
    customer_id             text NOT NULL,
    customer_name           text NOT NULL,
    customer_email          text NOT NULL,
    customer_phone          text NOT NULL,
    description             text NOT NULL,
    reference               text NOT NULL,
    metadata                jsonb NOT NULL, -- object of strings
    billing_country         text NOT NULL,
    billing_state           text NOT NULL,
    billing_postal_code     text NOT NULL,
    page_origins            text[] NOT NULL,
    client_secret           text NOT NULL,
    card_id                 text NOT NULL,
    pm_brand                text NOT NULL,
    pm_last4                text NOT NULL,
    pm_exp_month            integer NOT NULL,
    pm_exp_year             integer NOT NULL,
    pm_saved                boolean NOT NULL,
    authorization_code      text NOT NULL,
    order_id                text NOT NULL,
    refund_id               text NOT NULL,
    last_error_code         text NOT NULL,
    last_error_decline_code text NOT NULL,
    last_error_message      text NOT NULL,
    next_action_type        text NOT NULL,
    next_action_url         text NOT NULL,
    cancellation_reason     text NOT NULL,
    merchant_id             text NOT NULL,
    attempt_id              text NOT NULL,
    attempt_at              timestamptz NOT NULL,
    reconcile_at            timestamptz NOT NULL,
    reconcile_count         integer NOT NULL,
    succeeded_at            timestamptz NOT NULL,
    expires_at              timestamptz NOT NULL,
    created_at              timestamptz NOT NULL,
    updated_at              timestamptz NOT NULL,
    version                 bigint NOT NULL
);
CREATE INDEX payment_intents_store_seq ON payment_intents (store_id, seq);
CREATE UNIQUE INDEX payment_intents_attempt ON payment_intents (attempt_id) WHERE attempt_id <> '';
CREATE INDEX payment_intents_reconcile_due ON payment_intents (reconcile_at, seq)
    WHERE status IN ('processing', 'requires_action') AND reconcile_at <> '-infinity';
CREATE INDEX payment_intents_expire_due ON payment_intents (expires_at, seq) WHERE status = 'requires_payment_method';
CREATE INDEX payment_intents_status ON payment_intents (status);
