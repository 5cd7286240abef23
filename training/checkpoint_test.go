package training

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/dataset/datasettest"
	"github.com/freqlens/freqlens/model"
)

// checkpointCase is a small training run to stop and resume.
type checkpointCase struct {
	name       string
	cfg        model.Config
	tc         Config
	train, val model.Source
	meta       model.Meta
	clock      bool // the model reads the windows' times
}

func checkpointCases(t *testing.T) []checkpointCase {
	small := model.Config{Lookback: 24, Horizon: 6, Channels: 2, Hidden: 8, Frequencies: 8, TopK: 3}
	cases := []checkpointCase{
		{name: "defaults", cfg: small, tc: Config{Epochs: 7, Seed: 5},
			train: datasettest.Sines(300, 24, 6, 2, 1), val: datasettest.Sines(60, 24, 6, 2, 2)},
		// Without channel shuffling the window order decides each batch.
		{name: "ema, input noise, weight decay, early stopping, no channel shuffle", cfg: small,
			tc: Config{Epochs: 9, Seed: 6, EMA: 0.9, InputNoise: 0.05, WeightDecay: 0.01, Patience: 2, LearningRate: 0.02,
				ChannelShuffle: -1},
			train: datasettest.Sines(300, 24, 6, 2, 3), val: datasettest.Sines(60, 24, 6, 2, 4)},
	}
	// Frequencies placed on the spectrum and a clock read from the windows' times.
	f, _ := datasettest.LongCycle(11, 24, 2, 1500)
	times := make([]int64, f.Rows())
	for i, ts := range f.Times {
		times[i] = ts.UnixNano()
	}
	win := func(lo, hi int) model.Source {
		w, err := dataset.NewWindows(f.Values, 2, 24, 6, dataset.Range{Start: lo, End: hi})
		if err == nil {
			w, err = w.WithTimes(times)
		}
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	indep := small
	indep.Channels, indep.Mode = 1, model.Independent
	cases = append(cases, checkpointCase{name: "independent, placed frequencies and a clock", cfg: indep,
		tc: Config{Epochs: 6, Seed: 7}, train: win(0, 1200), val: win(1200-24, 1500),
		meta: model.Meta{Cadence: f.Cadence}, clock: true})
	return cases
}

// run trains c's model from its seed; stopAfter > 0 cancels the run after
// that many epochs of this call.
func (c checkpointCase) run(t *testing.T, checkpoint string, stopAfter int) (*model.Model, *Result, error) {
	t.Helper()
	m, err := model.New(c.cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta = c.meta
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tc := c.tc
	tc.Checkpoint = checkpoint
	ran := 0
	res, err := Train(ctx, m, c.train, c.val, tc, func(e EpochStats) {
		if e.Restored {
			return
		}
		if ran++; ran == stopAfter {
			cancel()
		}
	})
	return m, res, err
}

// sameRun reports how two results differ, ignoring wall times and whether
// epochs were restored.
func sameRun(a, b *Result) string {
	strip := func(es []EpochStats) []EpochStats {
		out := slices.Clone(es)
		for i := range out {
			out[i].Seconds, out[i].Restored = 0, false
		}
		return out
	}
	switch {
	case a.BestEpoch != b.BestEpoch || a.BestValMSE != b.BestValMSE:
		return "best epoch"
	case a.EpochsRun != b.EpochsRun || a.Stopped != b.Stopped:
		return "epochs run or why they stopped"
	case !slices.Equal(strip(a.Epochs), strip(b.Epochs)):
		return "epoch statistics"
	}
	return ""
}

// A run stopped after any epoch and resumed from its checkpoint ends with
// the model, bit for bit, and the epochs of a run that never stopped; and a
// checkpoint does not change what training computes.
func TestTrainResumesFromCheckpoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261127, 1))
	for _, c := range checkpointCases(t) {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			plain, plainRes, err := c.run(t, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			if plainRes.EpochsRun < 3 {
				t.Fatalf("the case runs %d epochs; it needs at least 3 to stop in between", plainRes.EpochsRun)
			}
			whole, wholeRes, err := c.run(t, filepath.Join(dir, "whole"), 0)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(whole.Params().Data, plain.Params().Data) || sameRun(wholeRes, plainRes) != "" {
				t.Fatalf("keeping a checkpoint changed the run (%s)", sameRun(wholeRes, plainRes))
			}

			// Stop twice at random epochs, then let the run finish.
			path := filepath.Join(dir, "stopped")
			first := 1 + rng.IntN(plainRes.EpochsRun-2)
			second := 1 + rng.IntN(plainRes.EpochsRun-first-1)
			for i, stop := range []int{first, second} {
				_, res, err := c.run(t, path, stop)
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("stop %d: err %v, want the cancellation", i+1, err)
				}
				if want := first + i*second; res.EpochsRun != want {
					t.Fatalf("stop %d: %d epochs run, want %d", i+1, res.EpochsRun, want)
				}
			}
			resumed, res, err := c.run(t, path, 0)
			if err != nil {
				t.Fatal(err)
			}
			if res.ResumedFrom != first+second {
				t.Errorf("resumed from epoch %d, want %d", res.ResumedFrom, first+second)
			}
			if resumed.ReadsTime() != c.clock {
				t.Errorf("the resumed model reads the time: %v, want %v", resumed.ReadsTime(), c.clock)
			}
			if !slices.Equal(resumed.Params().Data, plain.Params().Data) {
				t.Errorf("stopped after %d and %d more epochs and resumed: the model differs from the run that never stopped", first, second)
			}
			if d := sameRun(res, plainRes); d != "" {
				t.Errorf("stopped after %d and %d more epochs and resumed: the %s differ", first, second, d)
			}

			// A finished run's checkpoint gives its model again without training.
			again, againRes, err := c.run(t, path, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(again.Params().Data, plain.Params().Data) || sameRun(againRes, plainRes) != "" || againRes.ResumedFrom != plainRes.EpochsRun {
				t.Errorf("rerun on a finished checkpoint: resumed from %d (want %d), differs: %q", againRes.ResumedFrom, plainRes.EpochsRun, sameRun(againRes, plainRes))
			}
		})
	}
}

func TestCheckpointOfAnotherRunOrDamaged(t *testing.T) {
	c := checkpointCases(t)[0]
	c.tc.Epochs = 3
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt")
	if _, _, err := c.run(t, path, 1); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(leftovers) > 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}

	other := c
	other.tc.Seed++
	if _, _, err := other.run(t, path, 0); !errors.Is(err, ErrCheckpointMismatch) {
		t.Errorf("another seed: err %v, want ErrCheckpointMismatch", err)
	}
	other = c
	other.tc.LearningRate = 2e-3
	if _, _, err := other.run(t, path, 0); !errors.Is(err, ErrCheckpointMismatch) {
		t.Errorf("another learning rate: err %v, want ErrCheckpointMismatch", err)
	}
	other = c
	other.train = datasettest.Sines(300, 24, 6, 2, 99)
	if _, _, err := other.run(t, path, 0); !errors.Is(err, ErrCheckpointMismatch) {
		t.Errorf("other data: err %v, want ErrCheckpointMismatch", err)
	}
	// One value of one window changed, wherever it is.
	rng := rand.New(rand.NewPCG(7, 7))
	for range 5 {
		src := c.train.(datasettest.Slices)
		changed := src
		changed.X = slices.Clone(src.X)
		changed.X[rng.IntN(len(changed.X))] += 1e-9
		other = c
		other.train = changed
		if _, _, err := other.run(t, path, 0); !errors.Is(err, ErrCheckpointMismatch) {
			t.Errorf("one value changed: err %v, want ErrCheckpointMismatch", err)
		}
	}
	other = c
	other.meta.Cadence = 7 * time.Minute
	if _, _, err := other.run(t, path, 0); !errors.Is(err, ErrCheckpointMismatch) {
		t.Errorf("another cadence: err %v, want ErrCheckpointMismatch", err)
	}

	damage := map[string][]byte{
		"truncated": good[:len(good)-1-rng.IntN(len(good)/2)],
		"a bit flipped": func() []byte {
			b := slices.Clone(good)
			i := 24 + rng.IntN(len(b)-24)
			b[i] ^= 1 << rng.IntN(8)
			return b
		}(),
		"a byte more": append(slices.Clone(good), 0),
		"not one":     []byte("date,value\n2026-01-01,1\n"),
	}
	for what, b := range damage {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, err := c.run(t, path, 0)
		if err == nil || !(strings.Contains(err.Error(), "damaged") || strings.Contains(err.Error(), "not a FreqLens")) {
			t.Errorf("%s: err %v, want a damaged checkpoint", what, err)
		}
	}
	// A checkpoint that cannot be written costs the resumption, not the
	// run: every epoch says so, and the model is the one without.
	plain, _, err := c.run(t, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	m, res, err := c.run(t, filepath.Join(dir, "missing", "ckpt"), 0)
	if err != nil || !slices.Equal(m.Params().Data, plain.Params().Data) {
		t.Errorf("a checkpoint in a missing directory: err %v, same model %v; want the run to go on", err, err == nil && slices.Equal(m.Params().Data, plain.Params().Data))
	}
	for _, e := range res.Epochs {
		if !strings.Contains(e.CheckpointError, "could not be written") || !strings.Contains(e.CheckpointError, "no checkpoint is kept, and training goes on") {
			t.Errorf("epoch %d: checkpoint error %q", e.Epoch, e.CheckpointError)
		}
	}
	// Temporary files a killed run left are deleted.
	stale := path + ".12345.tmp"
	if err := os.WriteFile(stale, []byte("half a checkpoint"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The good file still resumes.
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, res, err := c.run(t, path, 0); err != nil || res.ResumedFrom != 1 || res.ResumedOn != "" {
		t.Errorf("resuming the intact checkpoint: err %v, resumed from %v", err, res)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a stale temporary file survived the run: %v", err)
	}
}
