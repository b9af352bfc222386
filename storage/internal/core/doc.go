// Package core is what keelpay's two SQL adapters, storage/sqlite and
// storage/postgres, have in common: the mapping between keelpay's records
// and table rows (column lists, values in column order, scanning, and the
// sealing and opening of the secrets kept at rest), the checks of
// conditional writes, list paging, the shape of error mapping, the
// re-sealing of existing rows at Open, and the queries whose only
// difference between the two databases is their SQL text.
//
// An adapter supplies a [Dialect] (how a time, a JSON value, a string
// list and a placeholder are written and read by its database), a [Conn]
// on which statements run, a [Writer] that gives writes a transaction,
// and the SQL text of the queries ([SQL]). It keeps its own connection
// and transaction handling and the queries that differ in more than
// text; a new column of a record is added here once.
//
// The SQL is written with named parameters (@name). [SQL.Init] compiles
// each query once into its database's placeholders against the names its
// caller passes (SQL.named), and fails on a name that is missing or
// unused: an argument is bound by its name, not by a number shared
// between texts.
//
// Each record's columns are declared once, in a table of column name,
// kind and the Go field it stores (intentTable in intent.go, the others
// in records.go): the column lists, the INSERT and versioned UPDATE
// statements, the values, the scan destinations and the opening of
// sealed columns all derive from it. Tests fail when a field of a record
// is stored by no column (TestIntentFieldsStored) and when a column's
// value and destination disagree (storagetest's Fields, a round trip of
// every field through each adapter).
//
// Reading and writing a row uses no reflection (CheckSQL, for tests,
// does), and a row is read with the destinations its adapter's driver
// reads fastest: PostgreSQL's columns directly, SQLite's through its own
// reader of one JSON array (see storage/sqlite).
//
// # Adding a field to a payment intent
//
// An output field of a payment intent touches these files:
//
//  1. objects.go: the field of keelpay.PaymentIntent.
//  2. storage/internal/core/intent.go: one column in intentTable (its
//     name, kind and field); the insert, update, reads and their
//     parameters follow.
//  3. storage/sqlite/migration/NNN_name.sql: ALTER TABLE payment_intents
//     ADD COLUMN.
//  4. storage/postgres/migration/NNN_name.sql: the same for PostgreSQL.
//  5. internal/render/intent.go: the field in AppendIntent, the one
//     renderer of an intent's JSON, and in IntentObject beside it, the
//     type embedders decode that JSON into.
//  6. docs/openapi.json: the field in the PaymentIntent schema.
//
// A field that is not stored is listed in intentNotStored instead of 2-4;
// one that is not shown, in internal/render's notOnWire instead of 5-6.
// Tests fail on a field missing from any of them: TestIntentFieldsStored
// (columns), storagetest's Fields case (values and scans, on both
// databases), and internal/render's TestIntentFieldsAndSchema and
// TestDecodeTypesHoldTheRendering (renderer, decode type and schema). The
// Go client's PaymentIntent (client/objects.go) is its own type, with
// times as time.Time, and shows a new field only once it is added there.
package core
