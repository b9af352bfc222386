// Package storage is the persistence contract of keelpay: one flat list of
// Noun+Verb methods ([Executor]) that works the same inside and outside a
// transaction ([Storage] adds WithTx, and Commit for the writes of a
// [Batch]), and the sentinel errors every adapter
// maps its driver's errors to ([ErrNotFound] and its siblings).
//
// A program that embeds keelpay only opens an adapter and passes it on; it
// never calls these methods itself.
//
// keelpay's two adapters live in their own packages (storage/sqlite,
// storage/postgres) and prove themselves with the conformance suite in
// storage/storagetest:
//
//	func TestConformance(t *testing.T) {
//		storagetest.Run(t, func(t *testing.T) storage.Storage { return openMyStore(t) })
//	}
//
// Every method that reads an object of a store takes the store id, so an
// object of another store is simply not found (no store ever sees another's objects).
// Times are kept to the microsecond, in UTC; the zero time stays zero.
//
// # Stability
//
// This package is the interface between keelpay's services and its
// adapters, not an API for stores. [Executor] gains, changes and loses
// methods as the services need them, in minor versions too; the
// CHANGELOG names every change. An adapter outside keelpay's tree is
// possible (storagetest says what it must do) but is not supported: the
// two adapters share their SQL, row mapping and sealing of data at rest
// through an internal package that others cannot import, and an adapter
// of its own would have to do all of that itself, keeping every row
// sealed as docs/security.md describes. Use storage/postgres for a
// database server.
package storage
