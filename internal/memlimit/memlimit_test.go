package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// host writes files (relative path → content) under a temporary directory
// laid out as / and returns a Host reading them.
func host(t *testing.T, files map[string]string) Host {
	t.Helper()
	root := t.TempDir()
	for path, content := range files {
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Host{ProcSelfCgroup: filepath.Join(root, "proc/self/cgroup"), CgroupRoot: filepath.Join(root, "sys/fs/cgroup")}
}

func TestLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		files  map[string]string
		want   int64
		source string // suffix of the file read; "" for none
		err    string
	}{
		{"cgroup v2 in a container (its own cgroup at the root)", map[string]string{
			"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "8589934592\n"}, 8 << 30, "sys/fs/cgroup/memory.max", ""},
		{"cgroup v2 at the process's path (the root has none)", map[string]string{
			"proc/self/cgroup":                           "0::/kubepods/pod1/ctr\n",
			"sys/fs/cgroup/kubepods/pod1/ctr/memory.max": "2147483648\n",
			"sys/fs/cgroup/memory.max":                   "max\n",
		}, 2 << 30, "kubepods/pod1/ctr/memory.max", ""},
		{"cgroup v2, the limit on a parent (a systemd slice, a pod)", map[string]string{
			"proc/self/cgroup":                           "0::/kubepods/pod1/ctr\n",
			"sys/fs/cgroup/kubepods/pod1/ctr/memory.max": "max\n",
			"sys/fs/cgroup/kubepods/pod1/memory.max":     "3221225472\n",
			"sys/fs/cgroup/kubepods/memory.max":          "68719476736\n",
		}, 3 << 30, "kubepods/pod1/memory.max", ""},
		{"cgroup v2, the child's limit below its parent's", map[string]string{
			"proc/self/cgroup":                           "0::/kubepods/pod1/ctr\n",
			"sys/fs/cgroup/kubepods/pod1/ctr/memory.max": "1073741824\n",
			"sys/fs/cgroup/kubepods/pod1/memory.max":     "3221225472\n",
		}, 1 << 30, "kubepods/pod1/ctr/memory.max", ""},
		{"cgroup v2 without a limit", map[string]string{
			"proc/self/cgroup": "0::/user.slice\n", "sys/fs/cgroup/user.slice/memory.max": "max\n"}, 0, "", ""},
		{"cgroup v1 with a limit", map[string]string{
			"proc/self/cgroup": "12:cpu,cpuacct:/docker/abc\n11:memory:/docker/abc\n",
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "1073741824\n"}, 1 << 30, "memory/docker/abc/memory.limit_in_bytes", ""},
		{"cgroup v1 inside the container (the path is the host's, the mount its own)", map[string]string{
			"proc/self/cgroup":                           "11:memory:/docker/abc\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "536870912\n"}, 512 << 20, "sys/fs/cgroup/memory/memory.limit_in_bytes", ""},
		{"cgroup v1 unlimited", map[string]string{
			"proc/self/cgroup": "11:memory:/\n", "sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0, "", ""},
		{"no cgroup at all", map[string]string{}, 0, "", ""},
		{"a limit that is not a number", map[string]string{
			"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "lots\n"}, 0, "", `holds "lots", not a number of bytes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, source, err := host(t, tc.files).Limit()
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("Limit error %v, want one containing %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatalf("Limit error %v", err)
			}
			if got != tc.want {
				t.Errorf("Limit = %d, want %d", got, tc.want)
			}
			if !strings.HasSuffix(source, tc.source) || (tc.source == "") != (source == "") {
				t.Errorf("Limit read %q, want a file ending in %q", source, tc.source)
			}
		})
	}
}

func TestApply(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1)) // restore what the test process had
	h := host(t, map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "1000000000\n"})
	noEnv := func(string) (string, bool) { return "", false }

	debug.SetMemoryLimit(math.MaxInt64)
	a, err := Apply(h, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if a.Limit != 900_000_000 || a.Container != 1_000_000_000 || debug.SetMemoryLimit(-1) != 900_000_000 {
		t.Errorf("Apply set %+v, runtime limit %d; want 90%% of the container's 1e9", a, debug.SetMemoryLimit(-1))
	}

	// GOMEMLIMIT wins, whatever it says.
	debug.SetMemoryLimit(math.MaxInt64)
	for _, v := range []string{"off", "2GiB"} {
		a, err := Apply(h, func(k string) (string, bool) { return v, k == "GOMEMLIMIT" })
		if err != nil || a.Limit != 0 || a.Env != v {
			t.Errorf("GOMEMLIMIT=%s: Apply = %+v, %v; want it to leave the runtime alone", v, a, err)
		}
		if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
			t.Errorf("GOMEMLIMIT=%s: Apply changed the runtime's limit to %d", v, got)
		}
	}

	// No container limit: nothing set.
	a, err = Apply(host(t, map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "max\n"}), noEnv)
	if err != nil || a.Limit != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("no container limit: Apply = %+v, %v, runtime limit %d; want nothing set", a, err, debug.SetMemoryLimit(-1))
	}
}
