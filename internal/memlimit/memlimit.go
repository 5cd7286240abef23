// Package memlimit sets the Go runtime's soft memory limit from the memory
// limit of the container (the cgroup) the process runs in, as operators of
// Go services expect since Prometheus 3 and Kubernetes' guidance.
//
// Without a soft limit the collector lets the heap grow to about twice its
// live size between collections (GOGC=100), so a replica whose live heap is
// over half of its container's limit is killed by the kernel although its
// data fit. With the limit set below the container's, the collector works
// harder as the heap nears it instead. GOMEMLIMIT, when set (to a size, or
// "off"), wins: Apply leaves the runtime as it is.
package memlimit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Fraction is the share of the container's limit given to the Go heap: the
// rest is for what the runtime does not count (goroutine stacks beyond the
// heap, the binary, memory-mapped files) and for the kernel's page cache.
const Fraction = 0.9

// Host is where Limit looks: the process's cgroup membership and the
// cgroup file system's mount point. Tests point it at a directory of their
// own.
type Host struct {
	ProcSelfCgroup string // normally /proc/self/cgroup
	CgroupRoot     string // normally /sys/fs/cgroup
}

// System returns the running machine's Host.
func System() Host { return Host{ProcSelfCgroup: "/proc/self/cgroup", CgroupRoot: "/sys/fs/cgroup"} }

// unlimited is the value at or above which a cgroup v1 limit means none
// (the kernel reports the largest page-aligned int64).
const unlimited = 1 << 62

// Limit returns the memory limit that binds the process, in bytes, and the
// file that gave it, or 0 and "" when there is none (no cgroup, or "max" or
// a value too large to mean a limit everywhere). It reads cgroup v2's
// memory.max, or v1's memory.limit_in_bytes, of the process's own cgroup and
// of each of its ancestors up to the mount's root, and keeps the smallest:
// a parent's limit binds its children too, and inside a container the
// mount's root is the container's own cgroup whatever path the process's
// cgroup file names. A file that exists but cannot be parsed is an error.
func (h Host) Limit() (int64, string, error) {
	v2, v1, err := h.paths()
	if err != nil {
		return 0, "", err
	}
	var candidates []string
	for _, p := range lineage(v2) {
		candidates = append(candidates, filepath.Join(h.CgroupRoot, p, "memory.max"))
	}
	for _, p := range lineage(v1) {
		candidates = append(candidates, filepath.Join(h.CgroupRoot, "memory", p, "memory.limit_in_bytes"))
	}
	var limit int64
	var source string
	for _, path := range candidates {
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, "", fmt.Errorf("memlimit: %w", err)
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return 0, "", fmt.Errorf("memlimit: %s holds %q, not a number of bytes", path, s)
		}
		if n < unlimited && (limit == 0 || n < limit) {
			limit, source = n, path
		}
	}
	return limit, source, nil
}

// lineage returns a cgroup path and its ancestors up to the root ("/"),
// the root alone for "" (the process's path unknown).
func lineage(path string) []string {
	p := filepath.Clean("/" + path)
	out := []string{p}
	for p != "/" {
		p = filepath.Dir(p)
		out = append(out, p)
	}
	return out
}

// paths returns the process's cgroup v2 path ("0::/path") and v1 memory
// controller path ("N:...memory...:/path") from ProcSelfCgroup; either is
// "" when absent, and both when the file does not exist.
func (h Host) paths() (v2, v1 string, err error) {
	b, err := os.ReadFile(h.ProcSelfCgroup)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("memlimit: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		id, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		controllers, path, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		switch {
		case id == "0" && controllers == "":
			v2 = path
		case containsController(controllers, "memory"):
			v1 = path
		}
	}
	return v2, v1, nil
}

func containsController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// Applied says what Apply did.
type Applied struct {
	// Limit is the soft memory limit Apply set in bytes, 0 when it set none.
	Limit int64
	// Container is the container's limit it came from, and Source the file
	// that gave it.
	Container int64
	Source    string
	// Env is GOMEMLIMIT's value when it is set (then Apply set nothing).
	Env string
}

// Apply sets the runtime's soft memory limit to Fraction of h's cgroup
// limit, unless GOMEMLIMIT is set (getenv is os.LookupEnv in a program) or
// there is no limit.
func Apply(h Host, getenv func(string) (string, bool)) (Applied, error) {
	if v, ok := getenv("GOMEMLIMIT"); ok && v != "" {
		return Applied{Env: v}, nil
	}
	limit, source, err := h.Limit()
	if err != nil || limit == 0 {
		return Applied{}, err
	}
	soft := int64(Fraction * float64(limit))
	debug.SetMemoryLimit(soft)
	return Applied{Limit: soft, Container: limit, Source: source}, nil
}
