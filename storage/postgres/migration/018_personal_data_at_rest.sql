-- Customers' personal data at rest. The name, email and phone of card
-- sessions' and payment intents' customers and the billing details of
-- payment intents are sealed like the secrets of migration 007: the
-- columns keep their type and now hold sealed text (enc:v1:<key id>:...).
-- SQL cannot seal (the keys are not in the database): the adapter's step
-- at Open, which runs after the migrations under the migration lock, seals
-- the plain values an older version left. No index or query reads these
-- columns; the comments tell whoever reads the schema what they hold.
COMMENT ON COLUMN card_sessions.customer_name IS 'sealed by keelpay (enc:v1:<key id>:...), see docs/security.md';
COMMENT ON COLUMN card_sessions.customer_email IS 'sealed by keelpay (enc:v1:<key id>:...), see docs/security.md';
COMMENT ON COLUMN card_sessions.customer_phone IS 'sealed by keelpay (enc:v1:<key id>:...), see docs/security.md';
COMMENT ON COLUMN payment_intents.customer_name IS 'sealed by keelpay (enc:v1:<key id>:...), see docs/security.md';
COMMENT ON COLUMN payment_intents.customer_email IS 'sealed by keelpay (enc:v1:<key id>:...), see docs/security.md';
COMMENT ON COLUMN payment_intents.customer_phone IS 'sealed by keelpay (enc:v1:<key id>:...), see docs/security.md';
COMMENT ON COLUMN payment_intents.billing_country IS 'sealed by keelpay (enc:v1:<key id>:...), see docs/security.md';
COMMENT ON COLUMN payment_intents.billing_state IS 'sealed by keelpay (enc:v1:<key id>:...), see docs/security.md';
COMMENT ON COLUMN payment_intents.billing_postal_code IS 'sealed by keelpay (enc:v1:<key id>:...), see docs/security.md';
