-- Due deliveries by store, so that a claim reads at most a few rows of each
-- store with room under its cap, whatever the backlog of the others.
CREATE INDEX deliveries_store_due ON deliveries (store_id, next_attempt_at, event_id) WHERE status = 'pending';

-- Rows by status of payment intents and deliveries, kept by triggers as the
-- rows change, so that metrics read a handful of rows instead of counting
-- the tables.
CREATE TABLE status_counts (
    kind   TEXT NOT NULL,
    status TEXT NOT NULL,
    n      INTEGER NOT NULL,
    PRIMARY KEY (kind, status)
) STRICT, WITHOUT ROWID;
INSERT INTO status_counts (kind, status, n) SELECT 'payment_intent', status, count(*) FROM payment_intents GROUP BY status;
INSERT INTO status_counts (kind, status, n) SELECT 'delivery', status, count(*) FROM deliveries GROUP BY status;

CREATE TRIGGER payment_intents_count_insert AFTER INSERT ON payment_intents BEGIN
    INSERT INTO status_counts (kind, status, n) VALUES ('payment_intent', NEW.status, 1)
        ON CONFLICT (kind, status) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER payment_intents_count_update AFTER UPDATE OF status ON payment_intents
WHEN OLD.status <> NEW.status BEGIN
    UPDATE status_counts SET n = n - 1 WHERE kind = 'payment_intent' AND status = OLD.status;
    INSERT INTO status_counts (kind, status, n) VALUES ('payment_intent', NEW.status, 1)
        ON CONFLICT (kind, status) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER payment_intents_count_delete AFTER DELETE ON payment_intents BEGIN
    UPDATE status_counts SET n = n - 1 WHERE kind = 'payment_intent' AND status = OLD.status;
END;
CREATE TRIGGER deliveries_count_insert AFTER INSERT ON deliveries BEGIN
    INSERT INTO status_counts (kind, status, n) VALUES ('delivery', NEW.status, 1)
        ON CONFLICT (kind, status) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER deliveries_count_update AFTER UPDATE OF status ON deliveries
WHEN OLD.status <> NEW.status BEGIN
    UPDATE status_counts SET n = n - 1 WHERE kind = 'delivery' AND status = OLD.status;
    INSERT INTO status_counts (kind, status, n) VALUES ('delivery', NEW.status, 1)
        ON CONFLICT (kind, status) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER deliveries_count_delete AFTER DELETE ON deliveries BEGIN
    UPDATE status_counts SET n = n - 1 WHERE kind = 'delivery' AND status = OLD.status;
END;
