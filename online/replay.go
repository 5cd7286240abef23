package online

import (
	"math/rand/v2"
	"slices"
	"sync"
)

// replay is the bounded buffer of completed (window, realised target)
// pairs that fine-tuning learns from. Each pair is stored in the input's
// units with the per-channel scale its errors are normalised by.
type replay struct {
	mu      sync.Mutex
	L, H, C int
	size    int    // pairs it holds at most
	policy  string // ReplayRecent or ReplayReservoir
	data    []float64
	seq     []int64  // arrival number of each slot's pair
	ends    []int64  // the time of each slot's window's newest step, Unix nanoseconds
	keys    []uint64 // the hash of each slot's series (seriesSeed)
	n       int      // slots in use
	next    int      // next slot (recent)
	seen    int64    // pairs ever added
	rng     *rand.Rand
}

func newReplay(size, L, H, C int, policy string, seed uint64) *replay {
	return &replay{L: L, H: H, C: C, size: size, policy: policy,
		rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}
}

func (r *replay) stride() int { return (r.L + r.H + 1) * r.C }

// add stores one pair: input L×C, target H×C, scale C (row-major, step then
// channel), all copied, end, the time of the input's newest step (Unix
// nanoseconds), which a model that reads the time needs, and key, its
// series' hash, by which a round's holdout is cut into blocks.
func (r *replay) add(input, target, scale []float64, end int64, key uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	slot := -1
	switch {
	case r.n < r.size:
		slot = r.n
		r.n++
		r.data = append(r.data, make([]float64, r.stride())...)
		r.seq = append(r.seq, 0)
		r.ends = append(r.ends, 0)
		r.keys = append(r.keys, 0)
	case r.policy == ReplayReservoir:
		if j := r.rng.Int64N(r.seen + 1); j < int64(r.size) {
			slot = int(j)
		}
	default:
		slot = r.next
		r.next = (r.next + 1) % r.size
	}
	r.seen++
	if slot < 0 {
		return
	}
	d := r.data[slot*r.stride() : (slot+1)*r.stride()]
	LC, HC := r.L*r.C, r.H*r.C
	copy(d[:LC], input)
	copy(d[LC:LC+HC], target)
	copy(d[LC+HC:], scale)
	r.seq[slot] = r.seen
	r.ends[slot], r.keys[slot] = end, key
}

// len returns the pairs held and the pairs ever added.
func (r *replay) len() (held int, seen int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, r.seen
}

// split copies the buffer out for a round: holdout is the newest
// max(minHoldout, frac·n) pairs, train at most maxTrain of the others,
// drawn at random. Both are normalised by norm.
func (r *replay) split(frac float64, minHoldout, maxTrain int, norm normaliser) (train, holdout *pairs) {
	r.mu.Lock()
	defer r.mu.Unlock()
	order := make([]int, r.n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(r.seq[b] - r.seq[a]) }) // newest first
	nh := min(max(minHoldout, int(frac*float64(r.n))), r.n)
	rest := order[nh:]
	r.rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	return r.copyOut(rest[:min(len(rest), maxTrain)], norm), r.copyOut(order[:nh], norm)
}

func (r *replay) copyOut(slots []int, norm normaliser) *pairs {
	p := &pairs{n: len(slots), L: r.L, H: r.H, C: r.C,
		x: make([]float64, len(slots)*r.L*r.C), y: make([]float64, len(slots)*r.H*r.C), ends: make([]int64, len(slots)),
		keys: make([]uint64, len(slots))}
	LC, HC := r.L*r.C, r.H*r.C
	for i, s := range slots {
		d := r.data[s*r.stride() : (s+1)*r.stride()]
		x, y := p.x[i*LC:(i+1)*LC], p.y[i*HC:(i+1)*HC]
		copy(x, d[:LC])
		copy(y, d[LC:LC+HC])
		norm.apply(x, r.C, d[LC+HC:])
		norm.apply(y, r.C, d[LC+HC:])
		p.ends[i], p.keys[i] = r.ends[s], r.keys[s]
	}
	return p
}

// pairs is a set of normalised (window, target) pairs with the time each
// window ends; it is a model.TimedSource.
type pairs struct {
	x, y    []float64
	ends    []int64
	keys    []uint64
	n       int
	L, H, C int
}

func (p *pairs) Len() int               { return p.n }
func (p *pairs) Channels() int          { return p.C }
func (p *pairs) Input(i int) []float64  { return p.x[i*p.L*p.C : (i+1)*p.L*p.C] }
func (p *pairs) Target(i int) []float64 { return p.y[i*p.H*p.C : (i+1)*p.H*p.C] }
func (p *pairs) EndTime(i int) (int64, bool) {
	return p.ends[i], true
}

// normaliser maps values in the input's units to the units the model was
// trained in (mixed models: its z-score) or to a series' own scale
// (independent models, which normalise each window themselves and are
// scale-equivariant, so dividing by the series' scale changes no forecast
// but makes errors of different series comparable).
type normaliser struct {
	mean, std []float64 // the model's training statistics; nil: use the pair's scale
}

func (n normaliser) apply(v []float64, C int, scale []float64) {
	for i := range v {
		c := i % C
		if n.std != nil {
			v[i] = (v[i] - n.mean[c]) / n.std[c]
		} else {
			v[i] /= scale[c]
		}
	}
}

// blocks cuts the pairs into blocks whose errors are close to
// independent, for the paired comparison of two models (measure.Options
// .Groups): by series, in up to n groups of series, and within a group by
// stretches of time of span each (a stretch of 2H steps: forecasts issued
// further apart predict different steps). Blocks with fewer than a tenth
// of the mean block's pairs join their neighbour in time. It returns
// each pair's block.
func (p *pairs) blocks(n int, span int64) []int {
	if p.n == 0 {
		return nil
	}
	lo := slices.Min(p.ends)
	type key struct {
		series uint64
		t      int64
	}
	index := map[key]int{}
	out := make([]int, p.n)
	for i, e := range p.ends {
		k := key{p.keys[i] % uint64(n), (e - lo) / max(span, 1)}
		g, ok := index[k]
		if !ok {
			g = len(index)
			index[k] = g
		}
		out[i] = g
	}
	return out
}
