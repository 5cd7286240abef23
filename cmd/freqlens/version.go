package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/freqlens/freqlens/modelfile"
)

// runVersion prints what the binary was built from: the module's version,
// the commit and whether the tree had uncommitted changes, the Go version,
// and the model file format it reads and writes.
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	version, commit, modified, goVersion := "(devel)", "unknown", false, "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		goVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if modified {
		commit += " (modified)"
	}
	fmt.Fprintf(stdout, "freqlens %s, commit %s, %s, model file format %d\n", version, commit, goVersion, modelfile.FormatVersion)
	return nil
}
