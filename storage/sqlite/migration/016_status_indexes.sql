-- Every status change of an intent or a delivery wrote the full index of
-- its status, which no query needs: the count of unknown outcomes reads
-- an index of those intents alone (nearly empty), and no query reads
-- deliveries by status alone (the counts come from status_counts, the
-- due deliveries from their partial indexes).
DROP INDEX IF EXISTS payment_intents_status;
CREATE INDEX payment_intents_outcome_unknown ON payment_intents (seq)
    WHERE status = 'processing' AND last_error_code = 'outcome_unknown';
DROP INDEX IF EXISTS deliveries_status;
