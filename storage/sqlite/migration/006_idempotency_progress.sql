-- Recovery points: the last step an Idempotency-Key's request committed,
-- written in the same transaction as that step, so that a retry after a
-- crash resumes instead of repeating committed work.
ALTER TABLE idempotency_keys ADD COLUMN recovery_point TEXT NOT NULL DEFAULT '';
ALTER TABLE idempotency_keys ADD COLUMN object_id TEXT NOT NULL DEFAULT '';
