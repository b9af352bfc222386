-- A provider's refund notification names the send's attempt id only: the
-- refund is found by it (RefundGetByAttempt).
CREATE INDEX refunds_attempt ON refunds (attempt_id);
