package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/freqlens/freqlens/training"
)

// progress shows training progress on w: a bar redrawn in place on a
// terminal, one line per epoch otherwise (logs, CI).
type progress struct {
	w        io.Writer
	terminal bool
	epochs   int
	started  time.Time
	best     float64
	bestAt   int
	restored int  // epochs a checkpoint had finished
	failing  bool // the last epoch's checkpoint could not be written
}

func newProgress(w io.Writer, epochs int) *progress {
	p := &progress{w: w, epochs: epochs}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

func (p *progress) start(msg string) {
	p.started = time.Now()
	fmt.Fprintln(p.w, msg)
}

// epoch reports a finished epoch.
func (p *progress) epoch(s training.EpochStats) {
	if s.Best {
		p.best, p.bestAt = s.ValMSE, s.Epoch
	}
	line := fmt.Sprintf("epoch %d/%d loss %.4f (mse %.4f div %.3f recon %.4f sparse %.3f var %.4f) val %.4f best %.4f@%d %.1fs",
		s.Epoch, p.epochs, s.Loss, s.MSE, s.Div, s.Recon, s.Sparse, s.Var, s.ValMSE, p.best, p.bestAt, s.Seconds)
	if s.Restored {
		// Epochs of an earlier run, reported again from its checkpoint.
		p.restored = s.Epoch
		line += " (from the checkpoint)"
	} else {
		perEpoch := time.Since(p.started) / time.Duration(s.Epoch-p.restored)
		line += fmt.Sprintf(" ETA ≤%s", (perEpoch * time.Duration(p.epochs-s.Epoch)).Round(time.Second))
	}
	// A checkpoint that cannot be written is said when it starts and
	// when it ends, not every epoch.
	switch {
	case s.CheckpointError != "" && !p.failing:
		line += "\nfreqlens train: warning: " + s.CheckpointError
	case s.CheckpointError == "" && p.failing && !s.Restored:
		line += "\nfreqlens train: the checkpoint is written again"
	}
	p.failing = s.CheckpointError != ""
	if !p.terminal {
		fmt.Fprintln(p.w, line)
		return
	}
	const width = 20
	done := width * s.Epoch / p.epochs
	bar := strings.Repeat("█", done) + strings.Repeat("░", width-done)
	fmt.Fprintf(p.w, "\r\033[K%s %s", bar, line)
}

// done ends the bar's line.
func (p *progress) done() {
	if p.terminal {
		fmt.Fprintln(p.w)
	}
}
