-- Stores and the rate-limit log.
CREATE TABLE stores (
    id              TEXT PRIMARY KEY,
    client_id       TEXT NOT NULL UNIQUE,
    client_secret   TEXT NOT NULL,
    merchant_id     TEXT NOT NULL,
    currency        TEXT NOT NULL,
    publishable_key TEXT NOT NULL UNIQUE,
    secret_key_hash BLOB NOT NULL UNIQUE,
    webhook_url     TEXT NOT NULL,
    webhook_secret  TEXT NOT NULL,
    version         INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
) STRICT;

-- One row a hit; limits count the hits of a key inside their window.
CREATE TABLE rate_limit_hits (
    key TEXT NOT NULL,
    at  INTEGER NOT NULL
) STRICT;
CREATE INDEX rate_limit_hits_key_at ON rate_limit_hits (key, at);
