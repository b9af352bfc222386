package storagetest

import "testing"

func testIdempotency(t *testing.T, newStorage NewStorage) {}
