package kafkatest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// BehindProxy starts a one-broker kfake cluster (with opts, say
// kfake.SeedTopics) that clients reach only through a TCP proxy the test
// can cut: kfake advertises the proxy's address, so every connection goes
// through it. Both stop when the test ends.
func BehindProxy(tb testing.TB, opts ...kfake.Opt) (*kfake.Cluster, *Proxy) {
	tb.Helper()
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var back string
	opts = append([]kfake.Opt{kfake.NumBrokers(1),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			ln, err := net.Listen(network, "127.0.0.1:0")
			if err != nil {
				return nil, err
			}
			back = ln.Addr().String()
			return advertised{Listener: ln, addr: front.Addr()}, nil
		})}, opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		front.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c, newProxy(tb, front, back)
}

// advertised is a listener that tells kfake its address is another's.
type advertised struct {
	net.Listener
	addr net.Addr
}

func (a advertised) Addr() net.Addr { return a.addr }

// Proxy forwards TCP connections from Addr to a target until Cut.
type Proxy struct {
	tb     testing.TB
	addr   string
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
	wg    sync.WaitGroup
	delay atomic.Int64 // ns added before every chunk forwarded
}

func newProxy(tb testing.TB, ln net.Listener, target string) *Proxy {
	p := &Proxy{tb: tb, addr: ln.Addr().String(), target: target, conns: map[net.Conn]bool{}}
	p.serve(ln)
	tb.Cleanup(func() {
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.addr }

// SetDelay adds d before every chunk forwarded in either direction: a slow
// network.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns[in], p.conns[out] = true, true
			p.mu.Unlock()
			p.wg.Add(2)
			go p.pipe(out, in)
			go p.pipe(in, out)
		}
	}()
}

// pipe copies src to dst until either fails, then closes both.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := p.delay.Load(); d > 0 {
				time.Sleep(time.Duration(d))
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// Cut closes the proxy's listener and every connection through it: the
// broker is unreachable (connection refused) until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
}

// Restore listens on the proxy's address again.
func (p *Proxy) Restore() {
	p.tb.Helper()
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		p.tb.Fatalf("proxy: listen on %s again: %v", p.addr, err)
	}
	p.serve(ln)
}

// FreeAddr returns a loopback address whose port was free a moment ago, for
// a listener (a broker, a metrics endpoint) that a test starts next. The
// port lies below the kernel's ephemeral range (32768 and up on Linux), so
// no connection of another test, in this process or another, is given it
// in the meantime, and no two calls of one process return the same port.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	freePorts.Lock()
	defer freePorts.Unlock()
	for range 200 {
		port := 20000 + rand.IntN(12000)
		if freePorts.given[port] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		freePorts.given[port] = true
		return ln.Addr().String()
	}
	// A crowded range: fall back to an ephemeral port, which another
	// connection may be given before the listener takes it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// freePorts are the ports FreeAddr has handed out in this test process.
var freePorts = struct {
	sync.Mutex
	given map[int]bool
}{given: map[int]bool{}}
