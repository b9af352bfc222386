package storagetest

import "testing"

func testPayments(t *testing.T, newStorage NewStorage) {}
