// Package postgrestest gives tests a PostgreSQL database of their own.
//
// The server is named by the environment variable KEELPAY_TEST_POSTGRES (a
// DSN). When it is empty, tests that need it are skipped, or fail when
// KEELPAY_REQUIRE_POSTGRES=1 (as in CI). Each test gets a fresh schema,
// dropped when it ends, so tests run in parallel on one database:
//
//	func TestSomething(t *testing.T) {
//		t.Parallel()
//		db := postgrestest.NewDB(t)
//		...
//	}
//
// A package with such tests reports the ones that skipped from its
// TestMain, so that a plain go test ./... shows them:
//
//	func TestMain(m *testing.M) { os.Exit(postgrestest.Run(m)) }
//
// Tests of several processes open one schema more than once:
//
//	schema := postgrestest.NewSchema(t)
//	a, b := postgrestest.Open(t, schema), postgrestest.Open(t, schema)
package postgrestest
