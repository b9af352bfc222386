package postgres

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// setTCPUserTimeout sets TCP_USER_TIMEOUT on a socket keelpay dials: data
// sent and not acknowledged for TCPUserTimeout ends the connection, so a
// query to a database cut off mid-statement fails instead of hanging.
func setTCPUserTimeout(network, address string, c syscall.RawConn) error {
	if network != "tcp" && network != "tcp4" && network != "tcp6" {
		return nil
	}
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(TCPUserTimeout.Milliseconds()))
	})
	if err != nil {
		return err
	}
	return serr
}
