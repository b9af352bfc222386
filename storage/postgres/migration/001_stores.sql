-- Stores and the rate-limit log. Times are timestamptz to the microsecond;
-- a time that is not set (Go's zero time) is '-infinity', so that, as 0 in
-- the SQLite adapter, it sorts before every set time and compares as due.
CREATE TABLE stores (
    id              text PRIMARY KEY,
    client_id       text NOT NULL UNIQUE,
    client_secret   text NOT NULL,
    merchant_id     text NOT NULL,
    currency        text NOT NULL,
    publishable_key text NOT NULL UNIQUE,
    secret_key_hash bytea NOT NULL UNIQUE,
    webhook_url     text NOT NULL,
    webhook_secret  text NOT NULL,
    version         bigint NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);

-- One row a hit; limits count the hits of a key inside their window.
CREATE TABLE rate_limit_hits (
    key text NOT NULL,
    at  timestamptz NOT NULL
);
CREATE INDEX rate_limit_hits_key_at ON rate_limit_hits (key, at);
