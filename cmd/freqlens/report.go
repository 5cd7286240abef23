package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/report"
)

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	modelPath := fs.String("model", "", "model file written by 'freqlens train'")
	data := fs.String("data", "", "optional CSV with the model's columns: adds a forecast with its parts and the test split's error by horizon step")
	at := fs.Int("at", 0, "0-based data row (header not counted) that ends the explained window (default: the last test window)")
	channel := fs.String("channel", "", "column the forecast figure shows (default: the last)")
	out := fs.String("out", "", "directory for the figures (PNG and SVG) and index.html")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := require(fs, "model", "out"); err != nil {
		return err
	}
	if *data == "" {
		for _, name := range []string{"at", "channel"} {
			if flagSet(fs, name) {
				return fmt.Errorf("--%s needs --data: the window to explain comes from a CSV", name)
			}
		}
	}
	m, err := model.Load(*modelPath)
	if err != nil {
		return err
	}
	opts := report.Options{At: *at, Channel: *channel, Name: filepath.Base(*modelPath)}
	if *data != "" {
		if flagSet(fs, "at") && *at == 0 {
			return fmt.Errorf("--at 0 cannot end a window of %d rows; use a row from %d on", m.Lookback(), m.Lookback()-1)
		}
		if opts.Data, err = loadWide(*data, stderr); err != nil {
			return err
		}
		if err := checkFits(m, opts.Data, *data); err != nil {
			return err
		}
		if flagSet(fs, "at") && *at < opts.Data.FileRows() {
			opts.At = opts.Data.FrameRow(*at) // --at counts the file's rows
		}
	}
	rep, err := report.Build(ctx, m, opts)
	if err != nil {
		return err
	}
	files, err := rep.Write(*out)
	if err != nil {
		return err
	}
	for _, f := range files {
		fmt.Fprintln(stdout, f)
	}
	fmt.Fprintf(stdout, "open %s in a browser\n", files[len(files)-1])
	return nil
}

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
