package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrAsyncStandby is the error of Open on a primary whose commits do not
// wait for a standby while standbys stream from it, unless
// Config.AllowAsyncStandby.
var ErrAsyncStandby = errors.New("postgres: the primary has standbys, and keelpay's commits do not wait for any of them " +
	"(synchronous_standby_names is empty, or synchronous_commit is off or local): " +
	"a failover to such a standby loses the latest commits, and with them answers keelpay gave and records of charges. " +
	"Make a standby synchronous (synchronous_standby_names, synchronous_commit = on), " +
	"or accept the risk with Config.AllowAsyncStandby (refserver: KEELPAY_POSTGRES_ALLOW_ASYNC_STANDBY=1); see docs/operating.md")

// Replication is what Open saw of the primary's replication.
type Replication struct {
	// Standbys is the number of standbys streaming from the primary that
	// keelpay's role can see (pg_stat_replication).
	Standbys int
	// Async is the number of those whose sync_state is async (or
	// potential: not waited for while another is); Unknown those whose
	// state keelpay's role may not read (it needs pg_read_all_stats).
	Async, Unknown int
	// Waits is true when keelpay's commits wait for a synchronous
	// standby: synchronous_standby_names is set and synchronous_commit is
	// remote_write, on or remote_apply in keelpay's sessions.
	Waits bool
}

// readReplication reads the primary's replication as keelpay's sessions
// see it.
//
// PostgreSQL documents the settings at
// https://www.postgresql.org/docs/current/runtime-config-replication.html
// (synchronous_standby_names: with it empty, replication is asynchronous)
// and https://www.postgresql.org/docs/current/runtime-config-wal.html
// (synchronous_commit: off and local do not wait for a standby), and the
// view at https://www.postgresql.org/docs/current/monitoring-stats.html
// (pg_stat_replication: one row per WAL sender, sync_state async,
// potential, sync or quorum; the columns other than pid are visible only
// to roles with the privileges of pg_read_all_stats, so a NULL state is
// counted as unknown).
func readReplication(ctx context.Context, pool *pgxpool.Pool) (Replication, error) {
	var r Replication
	var names, commit string
	err := pool.QueryRow(ctx, `SELECT current_setting('synchronous_standby_names'), current_setting('synchronous_commit'),
		count(s.pid), count(s.pid) FILTER (WHERE s.sync_state IN ('async', 'potential')),
		count(s.pid) FILTER (WHERE s.sync_state IS NULL)
		FROM (SELECT 1) one LEFT JOIN pg_stat_replication s ON true`).Scan(&names, &commit, &r.Standbys, &r.Async, &r.Unknown)
	if err != nil {
		return r, fmt.Errorf("postgres: read the primary's replication: %w", mapErr(err))
	}
	switch commit {
	case "remote_write", "on", "remote_apply":
		r.Waits = names != ""
	}
	return r, nil
}

// checkReplication refuses a primary with standbys that keelpay's commits
// do not wait for, unless allowed. A primary without visible standbys
// passes: on a managed service that replicates below PostgreSQL (storage
// replication), the operator's documentation is the only guide.
func checkReplication(r Replication, allow bool) error {
	if r.Standbys > 0 && !r.Waits && !allow {
		return fmt.Errorf("%w (standbys: %d)", ErrAsyncStandby, r.Standbys)
	}
	return nil
}
