-- Retention: events leave, oldest first, once their delivery is over and
-- they are older than the retention period, and card sessions that saved
-- no card leave a while after they expired. These indexes find them by
-- time without reading the rows that stay. (The migration runs in a
-- transaction, so on a large database it holds off writes to events and
-- card sessions while it builds them; create them beforehand with CREATE
-- INDEX CONCURRENTLY IF NOT EXISTS under these names to avoid that.)
CREATE INDEX IF NOT EXISTS events_created_at ON events (created_at);
CREATE INDEX IF NOT EXISTS card_sessions_unused_expiry ON card_sessions (expires_at) WHERE status <> 'completed';

-- A retention batch deletes a thousand deliveries in one statement. Counted
-- row by row, each deletion updated the connection's count row once more,
-- and each update walked the row versions the earlier ones had left in the
-- transaction: the counting of a batch grew with the square of its size.
-- Deletions of deliveries are now counted once a statement, from the rows
-- the statement deleted; insertions and updates stay counted row by row.
CREATE FUNCTION status_counts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO status_counts (kind, status, slot, n)
        SELECT TG_ARGV[0], status, pg_backend_pid(), -count(*) FROM deleted_rows GROUP BY status ORDER BY status
        ON CONFLICT (kind, status, slot) DO UPDATE SET n = status_counts.n + excluded.n;
    RETURN NULL;
END $$;
DROP TRIGGER deliveries_count_insert_delete ON deliveries;
CREATE TRIGGER deliveries_count_insert AFTER INSERT ON deliveries
    FOR EACH ROW EXECUTE FUNCTION status_counts_change('delivery');
CREATE TRIGGER deliveries_count_delete AFTER DELETE ON deliveries
    REFERENCING OLD TABLE AS deleted_rows
    FOR EACH STATEMENT EXECUTE FUNCTION status_counts_deleted('delivery');
