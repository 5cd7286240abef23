package loopback

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestRefusedStaysRefused: connections to the address are refused, and no
// listener can take its port while the test runs; afterwards one can.
func TestRefusedStaysRefused(t *testing.T) {
	var addr string
	t.Run("held", func(t *testing.T) {
		addr = Refused(t)
		for range 20 {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				t.Fatalf("a connection to %s was accepted", addr)
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("a connection to %s failed with %v, want connection refused", addr, err)
			}
		}
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			t.Fatalf("a listener took %s while it was held", addr)
		}
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("%s is still held after its test ended: %v", addr, err)
	}
	ln.Close()
}
