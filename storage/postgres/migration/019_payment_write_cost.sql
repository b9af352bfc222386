-- What a payment costs the database, cut where no guarantee needs the work
-- (measured with bench/pgstatements.sh: each status change of an intent or
-- a delivery rewrote every index of its table, and each counted change ran
-- a trigger with two upserts).

-- The count of intents whose outcome is unknown reads only those intents:
-- an index of them alone stays nearly empty, where the index of every
-- intent's status took a new entry at each status change. (The list filter
-- by status has its own index, payment_intents_store_status.)
DROP INDEX IF EXISTS payment_intents_status;
CREATE INDEX payment_intents_outcome_unknown ON payment_intents (seq)
    WHERE status = 'processing' AND last_error_code = 'outcome_unknown';

-- No query reads deliveries by status alone. The metrics' counts of
-- pending and failed deliveries are now counted from the table through
-- partial indexes (deliveries_due holds the pending ones; deliveries_failed
-- the failed ones, which only a receiver's lasting refusal adds), instead
-- of by triggers on every insert and status change.
DROP INDEX IF EXISTS deliveries_status;
CREATE INDEX deliveries_failed ON deliveries (store_id) WHERE status = 'failed';
DROP TRIGGER IF EXISTS deliveries_count_insert ON deliveries;
DROP TRIGGER IF EXISTS deliveries_count_update ON deliveries;
DROP TRIGGER IF EXISTS deliveries_count_delete ON deliveries;
DELETE FROM status_counts WHERE kind = 'delivery';

-- An intent's status change is counted in one statement (the old status's
-- row down and the new one's up) instead of two.
CREATE OR REPLACE FUNCTION status_counts_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        INSERT INTO status_counts AS c (kind, status, slot, n)
            VALUES (TG_ARGV[0], OLD.status, pg_backend_pid(), -1), (TG_ARGV[0], NEW.status, pg_backend_pid(), 1)
            ON CONFLICT (kind, status, slot) DO UPDATE SET n = c.n + excluded.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO status_counts AS c (kind, status, slot, n) VALUES (TG_ARGV[0], OLD.status, pg_backend_pid(), -1)
            ON CONFLICT (kind, status, slot) DO UPDATE SET n = c.n - 1;
    ELSE
        INSERT INTO status_counts AS c (kind, status, slot, n) VALUES (TG_ARGV[0], NEW.status, pg_backend_pid(), 1)
            ON CONFLICT (kind, status, slot) DO UPDATE SET n = c.n + 1;
    END IF;
    RETURN NULL;
END $$;

-- An idempotency key's row is updated once after its insert (its answer
-- or its step) and no indexed column changes: with room left on its page
-- the update stays HOT (no index touched). Applies to pages written from
-- now on.
ALTER TABLE idempotency_keys SET (fillfactor = 70);
