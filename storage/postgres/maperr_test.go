package postgres

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/internal/core"
)

func TestMapErr(t *testing.T) {
	t.Parallel()
	pg := func(code string) error { return fmt.Errorf("exec: %w", &pgconn.PgError{Code: code, Message: "m"}) }
	for _, tc := range []struct {
		err       error
		want      error
		transient bool
	}{
		{pgx.ErrNoRows, storage.ErrNotFound, false},
		{fmt.Errorf("scan: %w", pgx.ErrNoRows), storage.ErrNotFound, false},
		{pg(codeUniqueViolation), storage.ErrDuplicate, false},
		{pg(codeSerializationFailure), storage.ErrConflict, true},
		{pg(codeDeadlockDetected), storage.ErrConflict, true},
		{pg(codeLockNotAvailable), storage.ErrConflict, true},
	} {
		got := mapErr(tc.err)
		require.ErrorIs(t, got, tc.want, tc.err.Error())
		var te *core.TransientError
		require.Equal(t, tc.transient, errors.As(got, &te), tc.err.Error())
	}
	require.NoError(t, mapErr(nil))
	other := pg("23503") // foreign key violation: not a sentinel
	got := mapErr(other)
	require.Equal(t, other, got)
	for _, sentinel := range []error{storage.ErrNotFound, storage.ErrDuplicate, storage.ErrConflict} {
		require.NotErrorIs(t, got, sentinel)
	}
}
