-- Each connection counts in a slot of its own, its backend's process id, so
-- that two transactions never lock the same count row. With 16 slots picked
-- at random, concurrent payments took count rows that others held until
-- their commit, and two transactions that took two rows in opposite orders
-- deadlocked (each such payment waited out PostgreSQL's deadlock_timeout).
-- A process id is held by one backend at a time, and a backend runs one
-- transaction at a time.
--
-- Slot 0 belongs to no backend: it holds the counts of connections that
-- have ended, folded into it by fold_status_counts (the adapter folds a
-- connection's slot as its pool closes it, and every ended connection's
-- when it opens).
ALTER TABLE status_counts ALTER COLUMN slot TYPE integer;

CREATE OR REPLACE FUNCTION status_counts_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    s integer := pg_backend_pid();
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        INSERT INTO status_counts (kind, status, slot, n) VALUES (TG_ARGV[0], OLD.status, s, -1)
            ON CONFLICT (kind, status, slot) DO UPDATE SET n = status_counts.n - 1;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        INSERT INTO status_counts (kind, status, slot, n) VALUES (TG_ARGV[0], NEW.status, s, 1)
            ON CONFLICT (kind, status, slot) DO UPDATE SET n = status_counts.n + 1;
    END IF;
    RETURN NULL;
END $$;

-- fold_status_counts moves the counts of the slots that no live backend
-- holds (or of the caller's own slot, when only_mine) into slot 0, in one
-- statement: the sums never change. Folds that run at once take slot 0's
-- rows in one order, so they wait for each other but never deadlock.
CREATE FUNCTION fold_status_counts(only_mine boolean) RETURNS void LANGUAGE sql AS $$
    WITH gone AS (
        DELETE FROM status_counts c
        WHERE c.slot <> 0 AND CASE WHEN only_mine THEN c.slot = pg_backend_pid()
            ELSE NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = c.slot) END
        RETURNING kind, status, n
    )
    INSERT INTO status_counts (kind, status, slot, n)
    SELECT kind, status, 0, sum(n) FROM gone GROUP BY kind, status ORDER BY kind, status
    ON CONFLICT (kind, status, slot) DO UPDATE SET n = status_counts.n + excluded.n;
$$;
SELECT fold_status_counts(false);
