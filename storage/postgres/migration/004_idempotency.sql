-- Idempotency-Key records: one row a (store, key). status = 0 while the
-- request runs (locked by lock_token until locked_until); then status and
-- body hold its response until expires_at.
CREATE TABLE idempotency_keys (
    store_id     text NOT NULL,
    key          text NOT NULL,
    fingerprint  bytea NOT NULL,
    lock_token   text NOT NULL,
    locked_until timestamptz NOT NULL,
    status       integer NOT NULL DEFAULT 0,
    body         bytea NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (store_id, key)
);
CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);
