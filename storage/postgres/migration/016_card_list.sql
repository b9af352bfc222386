-- A customer's saved cards are listed newest first (CardList), and found
-- by the erasure of the customer's data.
CREATE INDEX IF NOT EXISTS cards_customer ON cards (store_id, customer_id, created_at, id);
