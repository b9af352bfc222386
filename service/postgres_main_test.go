package service_test

import (
	"os"
	"testing"

	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
)

// TestMain reports, in one line naming KEELPAY_TEST_POSTGRES, the tests of
// this package that skipped for want of PostgreSQL.
func TestMain(m *testing.M) { os.Exit(postgrestest.Run(m)) }
