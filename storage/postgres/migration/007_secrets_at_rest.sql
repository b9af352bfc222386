-- Secrets at rest. The client secret of a store's application is kept only
-- as a salted hash (client_secret_hash); the adapter's step at Open hashes
-- the plaintext an older version kept in client_secret and empties it, and
-- seals the webhook secret, the client secrets of card sessions and
-- payment intents and the stored responses of idempotency keys.
ALTER TABLE stores ADD COLUMN client_secret_hash text NOT NULL DEFAULT '';

-- One sealed check value per encryption key id: a key given under an id
-- the database knows must be the same key.
CREATE TABLE encryption_key_checks (
    key_id text PRIMARY KEY,
    sealed text NOT NULL
);

-- Rate-limit hits carry when they stop counting, so that expired hits of
-- every key are swept, not only those of keys that come back. Hits of an
-- older version get an hour, longer than any window.
ALTER TABLE rate_limit_hits ADD COLUMN expires_at timestamptz NOT NULL DEFAULT '-infinity';
UPDATE rate_limit_hits SET expires_at = at + interval '1 hour';
CREATE INDEX rate_limit_hits_expires_at ON rate_limit_hits (expires_at);
