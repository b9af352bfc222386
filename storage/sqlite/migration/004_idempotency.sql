-- Idempotency-Key records: one row a (store, key). status = 0 while the
-- request runs (locked by lock_token until locked_until); then status and
-- body hold its response until expires_at.
CREATE TABLE idempotency_keys (
    store_id     TEXT NOT NULL,
    key          TEXT NOT NULL,
    fingerprint  BLOB NOT NULL,
    lock_token   TEXT NOT NULL,
    locked_until INTEGER NOT NULL,
    status       INTEGER NOT NULL DEFAULT 0,
    body         BLOB NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    PRIMARY KEY (store_id, key)
) STRICT;
CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);
