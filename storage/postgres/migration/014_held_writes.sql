-- keelpay_fail aborts the statement, and with it the transaction, with the
-- SQLSTATE code: a conditional write that changed no row calls it, so that
-- its check travels with it. That lets a transaction's writes be sent with
-- its COMMIT in one round trip: a write that fails its check rolls the
-- whole transaction back instead of letting the COMMIT after it succeed.
-- keelpay raises KP404 (the row is missing, or the key is not held) and
-- KP409 (the row is there but did not qualify).
CREATE OR REPLACE FUNCTION keelpay_fail(code text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'keelpay: a conditional write changed no row' USING ERRCODE = code;
END $$;
