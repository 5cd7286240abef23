// Package loopback gives tests loopback addresses that behave one way for
// as long as the test runs.
//
// A port taken with net.Listen and closed again is free for anyone: a
// broker another test starts (in this process or another package's) can be
// given it, and a test that expects "connection refused" then talks to that
// broker. The addresses here stay held until the test ends.
package loopback

import "testing"

// Refused returns a loopback address on which every connection is refused
// until tb ends. A socket holds the port, bound but never listening, so the
// kernel answers each connection with a reset and gives the port to no
// listener and no outgoing connection in the meantime.
func Refused(tb testing.TB) string {
	tb.Helper()
	addr, release, err := holdRefused()
	if err != nil {
		tb.Fatalf("holding a loopback port that refuses connections: %v", err)
	}
	tb.Cleanup(release)
	return addr
}
