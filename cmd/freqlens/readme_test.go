package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freqlens/freqlens/internal/kafkaconn/kafkatest"
)

// TestReadmeQuickstart runs the README's quickstart as it is written, in
// its order: serve with its own broker in the background, replay, then the
// curl commands, each until it answers (serve trains its first model from
// what replay sends). The freqlens commands run in this process (the go
// build line is what builds them); the broker's and the listener's
// addresses are swapped for free ones, and the configuration's model.path
// for a temporary file, so that the test runs beside others. A README whose
// commands no longer work in their order fails it.
func TestReadmeQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the quickstart's first model")
	}
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := quickstartLines(t, string(readme))
	dir := t.TempDir()
	broker, listen := kafkatest.FreeAddr(t), kafkatest.FreeAddr(t)
	swap := strings.NewReplacer("127.0.0.1:9092", broker, "127.0.0.1:9464", listen)

	// The configuration the README names, on the free addresses.
	const cfgName = "examples/quickstart.yaml"
	raw, err := os.ReadFile(filepath.Join(root, cfgName))
	if err != nil {
		t.Fatal(err)
	}
	cfg := swap.Replace(string(raw))
	if !strings.Contains(cfg, "path: quickstart.safetensors") {
		t.Fatalf("%s no longer sets model.path: quickstart.safetensors; update this test", cfgName)
	}
	cfg = strings.Replace(cfg, "path: quickstart.safetensors", "path: "+filepath.Join(dir, "quickstart.safetensors"), 1)
	cfg += "metrics:\n  listen: " + listen + "\n"
	cfgPath := filepath.Join(dir, "quickstart.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	var bgOut lockedBuffer
	t.Cleanup(func() { cancel(); bg.Wait() })
	for _, line := range lines {
		line = swap.Replace(line)
		fields := strings.Fields(line)
		switch {
		case fields[0] == "go" && fields[1] == "build":
			continue // builds what the test runs in process
		case fields[0] == "./freqlens":
			args := fields[1:]
			background := args[len(args)-1] == "&"
			if background {
				args = args[:len(args)-1]
			}
			for i, a := range args {
				switch {
				case a == cfgName:
					args[i] = cfgPath
				case strings.HasPrefix(a, "testdata/") || strings.HasPrefix(a, "examples/"):
					args[i] = filepath.Join(root, a)
				}
			}
			if background {
				bg.Go(func() {
					if code := run(ctx, args, &bgOut, &bgOut); code != 0 && ctx.Err() == nil {
						t.Errorf("%s exited %d:\n%s", line, code, bgOut.String())
					}
				})
				continue
			}
			var out bytes.Buffer
			if code := run(ctx, args, &out, &out); code != 0 {
				t.Fatalf("%s exited %d:\n%s\n--- the background commands:\n%s", line, code, out.String(), bgOut.String())
			}
		case fields[0] == "curl":
			url := fields[len(fields)-1]
			switch {
			case strings.HasSuffix(url, "/readyz"):
				poll(t, url, 4*time.Minute, nil) // 200: ready
			case strings.HasSuffix(url, "/live/series"):
				var list struct{ Series []struct{ Series string } }
				body := poll(t, url, time.Minute, func(body []byte) bool {
					return json.Unmarshal(body, &list) == nil && len(list.Series) == 7
				})
				if len(list.Series) != 7 {
					t.Errorf("%s: %s; want the 7 columns of ETTh1 as series", line, body)
				}
			default:
				poll(t, url, time.Minute, nil)
			}
		default:
			t.Fatalf("the quickstart's line %q is none this test knows how to run; teach it", line)
		}
	}
}

// quickstartLines returns the commands of the README's first sh block
// under "## Quickstart", comments dropped.
func quickstartLines(t *testing.T, readme string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "## Quickstart")
	if !ok {
		t.Fatal("the README has no Quickstart section")
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	if !ok {
		t.Fatal("the README's Quickstart has no sh block")
	}
	block, _, _ := strings.Cut(rest, "```")
	var lines []string
	for _, line := range strings.Split(block, "\n") {
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	if len(lines) < 3 {
		t.Fatalf("the Quickstart's block holds %d commands: %q", len(lines), lines)
	}
	return lines
}

// poll gets url until it answers 200 with a body done accepts (any, when
// done is nil) and returns the body, failing the test after limit.
func poll(t *testing.T, url string, limit time.Duration, done func([]byte) bool) []byte {
	t.Helper()
	deadline := time.Now().Add(limit)
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		resp, err := client.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && (done == nil || done(body)) {
				return body
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET %s: %s %s after %v", url, resp.Status, body, limit)
			}
		} else if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v after %v", url, err, limit)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
