-- Due deliveries by store, so that a claim reads at most a few rows of each
-- store with room under its cap, whatever the backlog of the others.
CREATE INDEX deliveries_store_due ON deliveries (store_id, next_attempt_at, event_id) WHERE status = 'pending';

-- Rows by status of payment intents and deliveries, kept by triggers as the
-- rows change, so that metrics read a handful of rows instead of counting
-- the tables. Each change lands in one of 16 slots picked at random, so that
-- concurrent transactions rarely wait for each other's count row.
CREATE TABLE status_counts (
    kind   text NOT NULL,
    status text NOT NULL,
    slot   smallint NOT NULL,
    n      bigint NOT NULL,
    PRIMARY KEY (kind, status, slot)
);
INSERT INTO status_counts (kind, status, slot, n) SELECT 'payment_intent', status, 0, count(*) FROM payment_intents GROUP BY status;
INSERT INTO status_counts (kind, status, slot, n) SELECT 'delivery', status, 0, count(*) FROM deliveries GROUP BY status;

CREATE FUNCTION status_counts_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    s smallint := floor(random() * 16);
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
CREATE TRIGGER payment_intents_count_insert_delete AFTER INSERT OR DELETE ON payment_intents
    FOR EACH ROW EXECUTE FUNCTION status_counts_change('payment_intent');
CREATE TRIGGER payment_intents_count_update AFTER UPDATE OF status ON payment_intents
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION status_counts_change('payment_intent');
CREATE TRIGGER deliveries_count_insert_delete AFTER INSERT OR DELETE ON deliveries
    FOR EACH ROW EXECUTE FUNCTION status_counts_change('delivery');
CREATE TRIGGER deliveries_count_update AFTER UPDATE OF status ON deliveries
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION status_counts_change('delivery');
