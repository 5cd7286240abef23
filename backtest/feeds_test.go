package backtest

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/history"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/service"
	"github.com/freqlens/freqlens/training"
)

// feed is a seeded synthetic sensor feed with one shock of the kind real
// feeds have, as long-format CSV files: the training weeks, and the whole
// history the backtest replays (training weeks included, so that the
// windows are warm when the scored weeks begin).
type feed struct {
	name       string
	cadence    time.Duration
	shock      dataset.Shock
	frame      *dataset.Frame
	trainPath  string // the first trainWeeks
	allPath    string
	scoreFrom  time.Time // the first scored week's start
	shockFrom  time.Time
	shockUntil time.Time
}

const (
	feedSeries = 3
	trainWeeks = 6
	scoreWeeks = 4
)

// newFeed draws a feed: traffic-like sensors (day, week, rush hours, noise
// growing with the count) at cadence, and one shock of kind at a seeded
// day of the scored weeks (from the second on, so that a week before it is
// scored), of a seeded size.
func newFeed(t testing.TB, kind dataset.ShockKind, cadence time.Duration, seed uint64) *feed {
	t.Helper()
	day := int(24 * time.Hour / cadence)
	week := 7 * day
	steps := (trainWeeks + scoreWeeks) * week
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	cfg := dataset.Traffic(feedSeries, steps, cadence, seed)
	cfg.NoiseStd, cfg.NoiseRelative, cfg.MissingRate = 4, 0.06, 0.005
	scoreStart := trainWeeks * week
	// The shock starts on a seeded day of scored weeks 2 … 3, at a seeded
	// hour, so that a week is scored before it and at least a week after.
	startDay := trainWeeks*7 + 7 + rng.IntN(14)
	start := startDay*day + rng.IntN(day)
	sh := dataset.Shock{Kind: kind, Start: start}
	switch kind {
	case dataset.ShockHoliday:
		// A holiday week: Monday to Friday of a seeded week like Sundays.
		sh.Start = (trainWeeks + 1 + rng.IntN(2)) * week
		sh.Steps = week
	case dataset.ShockStorm:
		sh.Steps, sh.Factor = day, 0.4+0.3*rng.Float64()
	case dataset.ShockOutage:
		sh.Steps = int(time.Duration(2+rng.IntN(22)) * time.Hour / cadence)
	case dataset.ShockStuck:
		sh.Steps, sh.Series = day, []int{rng.IntN(feedSeries)}
	case dataset.ShockSpikes:
		sh.Steps, sh.Rate, sh.Factor = 2*day, 0.02+0.03*rng.Float64(), 1+rng.Float64()
		if rng.IntN(2) == 0 {
			sh.Factor = -0.6 * rng.Float64()
		}
	case dataset.ShockLevel:
		sh.Factor, sh.Series = 0.7+0.6*rng.Float64(), []int{rng.IntN(feedSeries)}
		if math.Abs(sh.Factor-1) < 0.15 {
			sh.Factor = 1.3
		}
	}
	cfg.Shocks = []dataset.Shock{sh}
	f, err := dataset.Synthetic(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fd := &feed{name: fmt.Sprintf("%s/%s/seed%d", kind, cadence, seed), cadence: cadence, shock: sh, frame: f,
		trainPath: filepath.Join(dir, "train.csv"), allPath: filepath.Join(dir, "all.csv"),
		scoreFrom: f.Times[scoreStart], shockFrom: f.Times[min(sh.Start, steps-1)]}
	end := min(sh.End(), steps)
	fd.shockUntil = f.Times[end-1].Add(cadence)
	writeLong(t, fd.trainPath, f, scoreStart)
	writeLong(t, fd.allPath, f, steps)
	return fd
}

// writeLong writes the first rows of f as long-format CSV (series, ts,
// value), missing readings left out, as a sensor feed's export is.
func writeLong(t testing.TB, path string, f *dataset.Frame, rows int) {
	t.Helper()
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(out)
	fmt.Fprintln(w, "series,ts,value")
	S := len(f.Columns)
	for r := range rows {
		ts := f.Times[r].Format(time.RFC3339)
		for s := range S {
			v := f.Values[r*S+s]
			if math.IsNaN(v) {
				continue
			}
			fmt.Fprintf(w, "%s,%s,%s\n", f.Columns[s], ts, strconv.FormatFloat(v, 'f', 2, 64))
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// trainFeed trains an independent model on the feed's training weeks as
// `freqlens train --data` does (time split, error quantiles recorded), with
// a short schedule.
func trainFeed(t testing.TB, fd *feed, horizon, epochs int) *model.Model {
	t.Helper()
	cfg := service.DefaultConfig()
	cfg.Cadence = fd.cadence
	pc := cfg.HistoryPanel("")
	d, err := history.FromFile(context.Background(), fd.trainPath, history.FileCSV, cfg.Readings, pc,
		history.Split{Lookback: 96, Horizon: horizon, MaxWindows: 6000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := training.Fit(context.Background(), d, 96, horizon, training.Options{Epochs: epochs, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return res.Model
}

// backtestFeed replays the feed's whole history through the serving path,
// scoring from its first scored week.
func backtestFeed(t testing.TB, fd *feed, m *model.Model, fineTune bool, every time.Duration) *Report {
	t.Helper()
	cfg := service.DefaultConfig()
	cfg.Cadence = fd.cadence
	cfg.Online.Enabled = fineTune
	cfg.Online.Intervals = []float64{0.8, 0.95}
	cfg.Pipeline.Workers = 1
	var rc readings.Config = cfg.InputFor(m)
	h, err := ReadFile(context.Background(), fd.allPath, history.FileCSV, rc)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Config: cfg, From: fd.scoreFrom, Every: every}
	for _, s := range fd.shock.Series {
		o.Focus = append(o.Focus, fd.frame.Columns[s]) // the timeline of the sensors it hit
	}
	rep, err := Run(context.Background(), m, h, o)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
