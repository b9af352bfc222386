package postgres

import (
	"errors"
	"testing"
)

func TestCheckReplication(t *testing.T) {
	for _, tc := range []struct {
		name  string
		r     Replication
		allow bool
		fails bool
	}{
		{name: "no standby", r: Replication{}},
		{name: "synchronous standby", r: Replication{Standbys: 1, Waits: true}},
		{name: "a synchronous standby and an asynchronous reader", r: Replication{Standbys: 2, Async: 1, Waits: true}},
		{name: "asynchronous standby", r: Replication{Standbys: 1, Async: 1}, fails: true},
		{name: "standby of unknown state, commits do not wait", r: Replication{Standbys: 1, Unknown: 1}, fails: true},
		{name: "asynchronous standby, allowed", r: Replication{Standbys: 1, Async: 1}, allow: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkReplication(tc.r, tc.allow)
			if tc.fails != (err != nil) || (err != nil && !errors.Is(err, ErrAsyncStandby)) {
				t.Fatalf("checkReplication(%+v, %v) = %v", tc.r, tc.allow, err)
			}
		})
	}
}
