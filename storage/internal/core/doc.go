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
// Nothing here uses reflection, and a row is read with the destinations
// its adapter's driver reads fastest: PostgreSQL's columns directly,
// SQLite's through its own reader of one JSON array (see
// storage/sqlite).
package core
