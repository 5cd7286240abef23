//go:build !unix

package loopback

import "net"

// holdRefused, where the unix socket calls are missing, frees a port the
// kernel picked and returns it: refused until someone else takes the port.
func holdRefused() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr, func() {}, nil
}
