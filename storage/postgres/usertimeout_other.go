//go:build !linux

package postgres

import "syscall"

// setTCPUserTimeout does nothing where TCP_USER_TIMEOUT does not exist:
// keepalives are the only client-side backstop there.
func setTCPUserTimeout(network, address string, c syscall.RawConn) error { return nil }
