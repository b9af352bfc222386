-- Due deliveries by store, so that a claim reads at most a few rows of each
-- store with room under its cap, whatever the backlog of the others.
CREATE INDEX deliveries_store_due ON deliveries (store_id, next_attempt_at, event_id) WHERE status = 'pending';
