package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"time"

	"github.com/freqlens/freqlens/report"
)

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	modelPath := fs.String("model", "", "model file written by 'freqlens train'")
	data := fs.String("data", "", "optional data: a wide CSV with the model's columns, or long-format CSV, Arrow or Parquet with --series; adds a forecast with its parts and the test split's error by horizon step")
	atFlag := fs.String("at", "", "where the explained window ends: the 0-based data row of a wide CSV (header not counted; default: the last test window), or the time of a step of long-format data")
	series := fs.String("series", "", "long-format --data: the series to report on (its run of steps that holds --at, else its longest)")
	configPath := fs.String("config", "", "long-format --data: the serve configuration whose input.* and window.* settings put its readings on steps (default: those the model was trained with)")
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
	m, err := loadModelFile(*modelPath)
	if err != nil {
		return err
	}
	opts := report.Options{Channel: *channel, Name: filepath.Base(*modelPath)}
	if *data != "" {
		cfg, format, err := detectData(*data, *configPath, m, stderr)
		if err != nil {
			return err
		}
		if format != "" {
			if *series == "" {
				return fmt.Errorf("%s is long-format data: --series names the series to report on", *data)
			}
			var at time.Time
			if *atFlag != "" {
				if at, err = parseAt(*atFlag); err != nil {
					return err
				}
			}
			row := 0
			if opts.Data, row, err = longWindow(ctx, m, *data, format, cfg, *series, at); err != nil {
				return err
			}
			opts.Excerpt = true // one series' run: its last 20% is no held-out split
			noteStep(stderr, at, opts.Data, row)
			if *atFlag != "" {
				opts.At = row
				noteZoneless(stderr, m, *atFlag, at)
			}
			opts.Zone = m.Location() // instants: written with their zone
		} else {
			if *series != "" {
				return fmt.Errorf("--series is for long-format data; %s is a wide CSV, whose columns are its channels", *data)
			}
			at, err := strconv.Atoi(*atFlag)
			switch {
			case *atFlag == "":
			case err != nil || at < 0:
				return fmt.Errorf("--at %s is not a row; use a 0-based data row from %d on", *atFlag, m.Lookback()-1)
			case at == 0:
				return fmt.Errorf("--at 0 cannot end a window of %d rows; use a row from %d on", m.Lookback(), m.Lookback()-1)
			}
			if opts.Data, err = loadWide(*data, cfg.Readings, stderr); err != nil {
				return err
			}
			if err := checkFits(m, opts.Data, *data); err != nil {
				return err
			}
			if err := checkLongEnough(m, *modelPath, opts.Data, *data); err != nil {
				return err
			}
			if rows := opts.Data.FileRows(); at >= rows {
				return fmt.Errorf("--at %d is past the last data row %d", at, rows-1)
			}
			opts.At = at
			if at > 0 {
				opts.At = opts.Data.FrameRow(at) // --at counts the file's rows
				opts.AtName = fmt.Sprintf("row %d", at)
			}
		}
	}
	rep, err := report.Build(ctx, m, opts)
	if err != nil && *series != "" && opts.Data != nil {
		return fmt.Errorf("%w\n  the report splits the series' run of %d steps as a file of its own to score it; predict explains a window of a shorter run", err, opts.Data.Rows())
	}
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
