package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/freqlens/freqlens/modelfile"
)

// TestVersion: `freqlens version` prints one line with the Go version and
// the model file format the build reads, and refuses arguments.
func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"version"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	line := out.String()
	if strings.Count(line, "\n") != 1 || !strings.HasPrefix(line, "freqlens ") || !strings.Contains(line, "go1.") ||
		!strings.Contains(line, fmt.Sprintf("model file format %d", modelfile.FormatVersion)) {
		t.Errorf("version printed %q", line)
	}
	if code := run(context.Background(), []string{"version", "--nope"}, &out, &errb); code != 2 {
		t.Errorf("version --nope: exit %d, want 2", code)
	}
}
