-- Every change of the stores table is announced on the channel
-- keelpay_stores, with the table's schema as the payload (keelpay databases
-- in several schemas of one PostgreSQL database tell their changes apart).
-- NOTIFY is transactional: the announcement leaves when the change commits,
-- and not at all when it rolls back. Each process's cache of authenticated
-- keys listens and forgets what it holds. A trigger rather than the
-- adapter's own statements, so that every writer announces, whichever
-- version of keelpay (or which tool) it is.
CREATE FUNCTION stores_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('keelpay_stores', TG_TABLE_SCHEMA);
    RETURN NULL;
END $$;
CREATE TRIGGER stores_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON stores
    FOR EACH STATEMENT EXECUTE FUNCTION stores_changed();
