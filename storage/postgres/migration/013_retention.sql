-- Retention: events leave, oldest first, once their delivery is over and
-- they are older than the retention period, and card sessions that saved
-- no card leave a while after they expired. These indexes find them by
-- time without reading the rows that stay. (The migration runs in a
-- transaction, so on a large database it holds off writes to events and
-- card sessions while it builds them; create them beforehand with CREATE
-- INDEX CONCURRENTLY IF NOT EXISTS under these names to avoid that.)
CREATE INDEX IF NOT EXISTS events_created_at ON events (created_at);
CREATE INDEX IF NOT EXISTS card_sessions_unused_expiry ON card_sessions (expires_at) WHERE status <> 'completed';
