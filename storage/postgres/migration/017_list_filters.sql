-- The lists of GET /v1/payment_intents and GET /v1/refunds are ordered by
-- (created_at, seq), newest first. Each filter is an equality on the
-- column after store_id, and a creation-time range and a cursor a range of
-- (created_at, seq) after it, so that a page is a walk of one index from
-- its start: about limit rows read, whatever the store's size, and no
-- sort.
CREATE INDEX payment_intents_store_created ON payment_intents (store_id, created_at, seq);
CREATE INDEX payment_intents_store_customer ON payment_intents (store_id, customer_id, created_at, seq);
CREATE INDEX payment_intents_store_status ON payment_intents (store_id, status, created_at, seq);
CREATE INDEX payment_intents_store_reference ON payment_intents (store_id, reference, created_at, seq);
-- The unfiltered list was in seq order; payment_intents_store_created
-- serves it now.
DROP INDEX payment_intents_store_seq;
CREATE INDEX refunds_store_created ON refunds (store_id, created_at, seq);
CREATE INDEX refunds_store_status ON refunds (store_id, status, created_at, seq);
-- A refund's intent is unique (refunds.payment_intent_id): its filter is
-- one row of that index.
