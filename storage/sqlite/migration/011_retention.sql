-- Retention: events leave, oldest first, once their delivery is over and
-- they are older than the retention period, and card sessions that saved
-- no card leave a while after they expired. These indexes find them by
-- time without reading the rows that stay. (On a large database the first
-- start after this migration spends a while building them.)
CREATE INDEX events_created_at ON events (created_at);
CREATE INDEX card_sessions_unused_expiry ON card_sessions (expires_at) WHERE status <> 'completed';
