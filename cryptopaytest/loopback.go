package cryptopaytest

import (
	"fmt"
	"net"
	"strings"
)

func checkLoopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: listen address %q: %v", ErrInvalid, addr, err)
	}
	if !isLoopbackHost(host) {
		return fmt.Errorf("%w: listen address %q is not loopback (use 127.0.0.1, ::1 or localhost)", ErrInvalid, addr)
	}
	return nil
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// hostOnly strips the port from a Host header value.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}
