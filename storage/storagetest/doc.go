// Package storagetest is the conformance suite of keelpay storage adapters,
// as testing/fstest is for file systems. An adapter's test calls Run once:
//
//	func TestConformance(t *testing.T) {
//		storagetest.Run(t, func(t *testing.T) storage.Storage {
//			db, err := Open(...) // a fresh, empty database for this test
//			...
//			t.Cleanup(func() { db.Close() })
//			return db
//		})
//	}
//
// Every test asks for its own database, so the suite runs in parallel.
package storagetest
