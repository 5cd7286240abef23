package measure

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/freqlens/freqlens/model"
)

// Options sets how an evaluation runs. The zero value means the defaults.
type Options struct {
	// BatchSize is the windows per forward pass.
	//
	// Default: 256
	BatchSize int
	// Workers is the number of goroutines; results do not depend on it.
	//
	// Default: 2
	Workers int
	// Groups, when not nil, holds the group (0 … G−1) of each window of
	// the source, such as its series, and the metrics then also score each
	// group (model.Metrics.GroupMSE).
	Groups []int
}

// Evaluate forecasts every window of src with the deterministic top-K and
// scores the forecasts against the targets.
func Evaluate(ctx context.Context, m *model.Model, src model.Source, opts Options) (model.Metrics, error) {
	return NewEvaluator(m, opts).Evaluate(ctx, src)
}

// Evaluator evaluates one model, as Evaluate does, as often as asked,
// keeping its workspaces from one call to the next: training scores the
// model on its validation windows after every epoch without allocating
// them again. The model's parameters may change between calls; each call
// reads them as they are. An Evaluator is not safe for concurrent use.
type Evaluator struct {
	m     *model.Model
	opts  Options
	cache []*model.Workspace
}

// NewEvaluator returns an Evaluator of m with opts (Options.Groups, when
// set, names the groups of the windows of every source it evaluates).
func NewEvaluator(m *model.Model, opts Options) *Evaluator {
	if opts.BatchSize <= 0 {
		opts.BatchSize = 256
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	return &Evaluator{m: m, opts: opts}
}

// Evaluate forecasts every window of src with the deterministic top-K and
// scores the forecasts against the targets. Partial sums are kept per
// batch and added in batch order, so the result is the same for any
// number of workers.
func (ev *Evaluator) Evaluate(ctx context.Context, src model.Source) (model.Metrics, error) {
	m, workers, batch, groups := ev.m, ev.opts.Workers, ev.opts.BatchSize, ev.opts.Groups
	if groups != nil && len(groups) != src.Len() {
		return model.Metrics{}, fmt.Errorf("measure: %d groups for %d windows", len(groups), src.Len())
	}
	for i, g := range groups {
		if g < 0 || g >= len(groups) {
			return model.Metrics{}, fmt.Errorf("measure: window %d has group %d; groups count from 0 and there are at most as many as windows (%d)", i, g, len(groups))
		}
	}
	bt, err := m.NewBatcher(src)
	if err != nil {
		return model.Metrics{}, err
	}
	cfg := m.Config()
	L, H, C := cfg.Lookback, cfg.Horizon, cfg.Channels
	srcC := src.Channels()
	samples := bt.Samples()
	nb := (samples + batch - 1) / batch
	partial := make([]float64, nb*2*srcC) // per batch: squared then absolute error per source channel
	N := cfg.Frequencies
	counts := make([]int, workers*N)
	R := len(m.Meta.Rhythms)
	shareAcc := make([]float64, nb*(N+R+1)) // per batch: shares by frequency, by rhythm, then the residual's
	var perSample []float64                 // with groups: each sample's squared, then absolute error
	if groups != nil {
		perSample = make([]float64, 2*samples)
	}
	for len(ev.cache) < workers {
		ev.cache = append(ev.cache, m.NewWorkspace(batch))
	}
	independent := m.Config().Mode == model.Independent
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		ws := ev.cache[w]
		cnt := counts[w*N : (w+1)*N]
		bt := bt.ForWorker()
		wg.Go(func() {
			x := make([]float64, batch*L*C)
			y := make([]float64, batch*H*C)
			out := make([]float64, batch*H*C)
			tau := make([]float64, batch*C)
			idx := make([]int, batch)
			for {
				k := int(next.Add(1)) - 1
				if k >= nb || ctx.Err() != nil {
					return
				}
				lo, hi := k*batch, min((k+1)*batch, samples)
				n := hi - lo
				for j := range n {
					idx[j] = lo + j
				}
				bt.Fill(x, y, tau, idx[:n])
				bt.Forecast(ws, out[:n*H*C], x[:n*L*C], tau[:n*C], n)
				for j := range n {
					for _, f := range ws.Selection(j) {
						cnt[f]++
					}
				}
				sa := shareAcc[k*(N+R+1) : (k+1)*(N+R+1)]
				for j := range n {
					sa[N+R] += ws.AddShares(j, sa[:N], sa[N:N+R])
				}
				p := partial[k*2*srcC : (k+1)*2*srcC]
				for j := range n {
					o, t := out[j*H*C:(j+1)*H*C], y[j*H*C:(j+1)*H*C]
					for i := range o {
						c := i % C
						if independent {
							c = (lo + j) % srcC
						}
						e := o[i] - t[i]
						p[c] += e * e
						p[srcC+c] += math.Abs(e)
						if perSample != nil {
							perSample[2*(lo+j)] += e * e
							perSample[2*(lo+j)+1] += math.Abs(e)
						}
					}
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return model.Metrics{}, err
	}
	s := sums{counts: counts, shares: shareAcc, errors: partial, N: N, R: R, channels: srcC, batches: nb, workers: workers}
	met := s.metrics(src.Len(), samples, H, time.Since(start).Seconds())
	if groups != nil && samples > 0 {
		scoreGroups(&met, groups, perSample, samples/src.Len(), H*srcC)
	}
	return met, nil
}

// sums are Evaluate's sums, per worker (counts) or per batch (shares,
// errors), added in order so that the metrics do not depend on how many
// workers ran.
type sums struct {
	counts                           []int     // per worker: how many windows selected each of N frequencies
	shares                           []float64 // per batch: shares by frequency (N), by rhythm (R), then the residual's
	errors                           []float64 // per batch: squared, then absolute error per source channel
	N, R, channels, batches, workers int
}

// metrics turns the sums of samples model windows of windows source
// windows, horizon H, into Metrics, with the time they took.
func (e sums) metrics(windows, samples, H int, secs float64) model.Metrics {
	N, R, srcC := e.N, e.R, e.channels
	met := model.Metrics{
		PerChannelMSE: make([]float64, srcC),
		PerChannelMAE: make([]float64, srcC),
		Windows:       windows,
		Channels:      srcC,
		Seconds:       secs,
		Selected:      make([]int, N),
	}
	for w := range e.workers {
		for f := range N {
			met.Selected[f] += e.counts[w*N+f]
		}
	}
	if secs > 0 {
		met.WindowsPerSecond = float64(windows) / secs
	}
	met.Shares = make([]float64, N)
	met.RhythmShares = make([]float64, R)
	for k := range e.batches {
		sa := e.shares[k*(N+R+1) : (k+1)*(N+R+1)]
		for f := range N {
			met.Shares[f] += sa[f]
		}
		for r := range R {
			met.RhythmShares[r] += sa[N+r]
		}
		met.ResidualShare += sa[N+R]
	}
	if samples > 0 {
		for f := range N {
			met.Shares[f] /= float64(samples)
		}
		for r := range R {
			met.RhythmShares[r] /= float64(samples)
		}
		met.ResidualShare /= float64(samples)
	}
	for k := range e.batches {
		p := e.errors[k*2*srcC : (k+1)*2*srcC]
		for c := range srcC {
			met.PerChannelMSE[c] += p[c]
			met.PerChannelMAE[c] += p[srcC+c]
		}
	}
	per := float64(windows * H)
	for c := range srcC {
		met.MSE += met.PerChannelMSE[c]
		met.MAE += met.PerChannelMAE[c]
		met.PerChannelMSE[c] /= per
		met.PerChannelMAE[c] /= per
	}
	met.MSE /= per * float64(srcC)
	met.MAE /= per * float64(srcC)
	met.RMSE = math.Sqrt(met.MSE)
	return met
}

// scoreGroups fills met's group metrics from each sample's summed squared
// and absolute errors (perSample), k samples to a source window and n
// values to a window, adding in window order.
func scoreGroups(met *model.Metrics, groups []int, perSample []float64, k, n int) {
	G := 0
	for _, g := range groups {
		G = max(G, g+1)
	}
	met.GroupMSE, met.GroupMAE, met.GroupWindows = make([]float64, G), make([]float64, G), make([]int, G)
	for s := range len(perSample) / 2 {
		g := groups[s/k]
		met.GroupMSE[g] += perSample[2*s]
		met.GroupMAE[g] += perSample[2*s+1]
	}
	for _, g := range groups {
		met.GroupWindows[g]++
	}
	for g := range G {
		if met.GroupWindows[g] > 0 {
			met.GroupMSE[g] /= float64(met.GroupWindows[g] * n)
			met.GroupMAE[g] /= float64(met.GroupWindows[g] * n)
		}
	}
}
