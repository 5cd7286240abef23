package model

import (
	"fmt"
	"math"
	"time"
	_ "time/tzdata" // the zone database, so a model's time zone loads on a machine without one

	"github.com/freqlens/freqlens/cycles"
	"github.com/freqlens/freqlens/internal/gemm"
)

// The clock: how a model sees where in each rhythm a window ends.
//
// A window of L steps cannot tell where in a cycle longer than itself it
// stands (a 96-hour window and the week), and even for a shorter cycle its
// own phase estimate is noisy. The readings' timestamps say it exactly. So
// every frequency i of a rhythm r (period P_r, harmonic k_i, frequency
// k_i/P_r) adds a term phased by the time of the window's newest step τ
// (in steps since the Unix epoch):
//
//	ρ_r(τ)   = AnchorPhase_r + (τ − AnchorStep_r)/P_r              the rhythm's phase in cycles
//	q_ic(s)  = a_ic·cos(2π k_i (ρ_r + s/P_r)) + b_ic·sin(2π k_i (ρ_r + s/P_r))
//
// at step s from the window's end (s = 1 … H ahead, s = −(L−1) … 0 in the
// window), with (a_ic, b_ic) learned per channel (Params.Clock). Its future
// values are part of frequency i's contribution (every window selects a
// rhythm's frequencies); its past values are what the rhythm puts into the window,
// which the residual MLP does not see (see leftover). The term depends on
// the time only, never on the selection, so every contribution stays an
// exact additive part and a frequency's removal moves the forecast by
// exactly its contribution.
//
// With the angle at the window's end φ = 2π k_i ρ_r and ω = 2π k_i/P_r,
//
//	q(s) = A·cos(ωs) + B·sin(ωs),  A = a cos φ + b sin φ,  B = b cos φ − a sin φ
//
// so a window's terms are one product of the fixed table [cos ωs | sin ωs]
// with its 2M×C coefficients (A, B), M the number of rhythm frequencies.
// With instance normalisation the table's columns are centred on their
// mean over the window: q(s) − mean_window q, what the rhythm adds beyond
// its level in the window (which the window's mean μ already holds).

// clock is what a model derives from its rhythms: the rhythm frequencies,
// their exact frequencies and the table of their atoms over the window and
// the horizon. It changes only when the rhythms do (setClock), never during
// a training step, and is read-only otherwise.
type clock struct {
	// active says the model reads the time: at least one rhythm and a
	// known cadence.
	active bool
	// ids are the M rhythm frequencies, in id order: the fixed set whose
	// atoms the residual's input leaves out, and, when active,
	// the frequencies with a clock term.
	ids    []int
	rhythm []int     // M: index into Meta.Rhythms
	freq   []float64 // M: k/P in cycles per step
	member []int     // N: index into ids, −1 for a frequency of no rhythm
	// tab is (L+H)×2M: row L−1+s holds cos(ω_m s), sin(ω_m s) for
	// s = −(L−1) … H; rows 0 … L−1 are the window, L … L+H−1 the horizon.
	tab []float64
	// cadence is Meta.Cadence in nanoseconds.
	cadence int64
	// zone is Meta.TimeZone's location, nil for UTC: times are read as
	// its wall clock.
	zone *time.Location
}

// setClock derives the clock from m.Meta.Rhythms and m.Meta.Cadence. Call
// it whenever either changes.
func (m *Model) setClock() {
	cfg := m.cfg
	L, H, N := cfg.Lookback, cfg.Horizon, cfg.Frequencies
	ck := &clock{member: make([]int, N)}
	for i := range ck.member {
		ck.member[i] = -1
	}
	// Members in id order, each with its rhythm and harmonic.
	for id := range N {
		r, k := m.rhythmOf(id)
		if r < 0 {
			continue
		}
		ck.member[id] = len(ck.ids)
		ck.ids = append(ck.ids, id)
		ck.rhythm = append(ck.rhythm, r)
		ck.freq = append(ck.freq, float64(k)/m.Meta.Rhythms[r].PeriodSteps)
	}
	m.cfg.rhythmSlots = len(ck.ids)
	ck.cadence = int64(m.Meta.Cadence)
	ck.active = len(ck.ids) > 0 && ck.cadence > 0
	if m.Meta.TimeZone != "" {
		// Meta.Check (and so Assemble) and SetTimeZone have checked the name.
		ck.zone, _ = time.LoadLocation(m.Meta.TimeZone)
	}
	M := len(ck.ids)
	ck.tab = make([]float64, (L+H)*2*M)
	for row := range L + H {
		s := float64(row - (L - 1))
		for j, f := range ck.freq {
			sn, cs := math.Sincos(2 * math.Pi * f * s)
			ck.tab[row*2*M+2*j], ck.tab[row*2*M+2*j+1] = cs, sn
		}
	}
	if cfg.Norm == NormInstance {
		// Instance normalisation takes each window's mean out, so a term is
		// what the rhythm adds beyond its mean over the window: its level
		// in the window is the window's level, which the residual part
		// carries (μ), and a rhythm longer than the window still forecasts
		// only how it moves from there.
		for j := range 2 * M {
			mean := 0.0
			for row := range L {
				mean += ck.tab[row*2*M+j]
			}
			mean /= float64(L)
			for row := range L + H {
				ck.tab[row*2*M+j] -= mean
			}
		}
	}
	m.clock = ck
}

// rhythmOf returns the rhythm of frequency id and its harmonic number, or
// −1 when it belongs to none.
func (m *Model) rhythmOf(id int) (rhythm, harmonic int) {
	for r, rh := range m.Meta.Rhythms {
		for j, f := range rh.Frequencies {
			if f == id {
				return r, rh.Harmonics[j]
			}
		}
	}
	return -1, 0
}

// rhythmOfID returns the index of frequency id's rhythm, −1 for none.
func (ck *clock) rhythmOfID(id int) int {
	if id < 0 || id >= len(ck.member) || ck.member[id] < 0 {
		return -1
	}
	return ck.rhythm[ck.member[id]]
}

// steps returns the time t (Unix nanoseconds) in steps of the cadence since
// the Unix epoch, exactly to float64 rounding; with a time zone, the wall
// clock time there at t (t plus the zone's offset from UTC at t), so that
// the same local hour is the same phase in winter and in summer.
func (ck *clock) steps(t int64) float64 {
	if ck.zone != nil {
		_, off := time.Unix(0, t).In(ck.zone).Zone()
		t += int64(off) * int64(time.Second)
	}
	q, r := t/ck.cadence, t%ck.cadence
	return float64(q) + float64(r)/float64(ck.cadence)
}

// SetTimeZone makes the clock read times as the wall clock of the IANA
// time zone name ("Europe/Berlin"; "" or "UTC" for UTC): see
// Meta.TimeZone. Set it before training, which anchors the rhythms'
// phases in the same clock.
func (m *Model) SetTimeZone(name string) error {
	if name == "UTC" {
		name = ""
	}
	if name != "" {
		if _, err := time.LoadLocation(name); err != nil {
			return fmt.Errorf("model: time zone %q: %w; use an IANA name such as Europe/Berlin or America/New_York", name, err)
		}
	}
	m.Meta.TimeZone = name
	m.setClock()
	return nil
}

// Location returns the time zone whose wall clock the model keeps
// (Meta.TimeZone, loaded when it was set), or UTC.
func (m *Model) Location() *time.Location {
	if m.clock.zone != nil {
		return m.clock.zone
	}
	return time.UTC
}

// ClockStep returns t in the clock's steps since the epoch: the time the
// rhythms' phases are read at (Meta.TimeZone's wall clock, or UTC), or 0
// when the model has no cadence.
func (m *Model) ClockStep(t time.Time) float64 {
	if m.clock.cadence <= 0 {
		return 0
	}
	return m.clock.steps(t.UnixNano())
}

// phase returns rhythm r's phase in cycles, in [0, 1), at τ steps since the
// Unix epoch.
func phaseAt(rh *cycles.Rhythm, tau float64) float64 {
	p := rh.AnchorPhase + (tau-rh.AnchorStep)/rh.PeriodSteps
	return p - math.Floor(p)
}

// clockForward fills, for the n windows of the pass, the coefficients
// (A, B) of every rhythm frequency and channel (ws.ab, n × 2M × C) from the
// windows' times (ws.tau, n × C steps since the epoch) and the terms'
// values over the window and the horizon (ws.qprof, n × (L+H) × C). A
// frequency in ws.without gets no term.
func (m *Model) clockForward(ws *Workspace, n int) {
	ck, p := m.clock, m.params
	L, H, C := m.cfg.Lookback, m.cfg.Horizon, m.cfg.Channels
	M := len(ck.ids)
	ab, qp := ws.ab[:n*2*M*C], ws.qprof[:n*(L+H)*C]
	removed := false
	for _, id := range ck.ids {
		removed = removed || (ws.without != nil && ws.without[id])
	}
	for b := range n {
		abb := ab[b*2*M*C : (b+1)*2*M*C]
		for j, id := range ck.ids {
			rowA, rowB := abb[2*j*C:(2*j+1)*C], abb[(2*j+1)*C:(2*j+2)*C]
			rh := &m.Meta.Rhythms[ck.rhythm[j]]
			k := ck.freq[j] * rh.PeriodSteps
			a, bb := p.Clock[2*id*C:(2*id+1)*C], p.Clock[(2*id+1)*C:(2*id+2)*C]
			for c := range C {
				rho := phaseAt(rh, ws.tau[b*C+c])
				sn, cs := math.Sincos(2 * math.Pi * math.Mod(k*rho, 1))
				rowA[c] = a[c]*cs + bb[c]*sn
				rowB[c] = bb[c]*cs - a[c]*sn
			}
		}
		q := qp[b*(L+H)*C : (b+1)*(L+H)*C]
		clear(q)
		if !removed {
			gemm.NN(L+H, C, 2*M, ck.tab, 2*M, abb, C, q, C)
			continue
		}
		// The window's rows keep every rhythm (the residual's input does
		// not depend on what is removed); the horizon's rows lose the
		// removed frequencies' terms.
		gemm.NN(L, C, 2*M, ck.tab, 2*M, abb, C, q, C)
		kept := ws.abKept[:2*M*C]
		copy(kept, abb)
		for j, id := range ck.ids {
			if ws.without[id] {
				clear(kept[2*j*C : (2*j+2)*C])
			}
		}
		gemm.NN(H, C, 2*M, ck.tab[L*2*M:], 2*M, kept, C, q[L*C:], C)
	}
}

// clockBackward adds the gradient of the clock coefficients to g.Clock,
// given ∂L/∂q for the n windows in ws.tr.dq (n × (L+H) × C): through
// (A, B) = R(φ)·(a, b),
//
//	∂L/∂a = ∂L/∂A·cos φ − ∂L/∂B·sin φ,  ∂L/∂b = ∂L/∂A·sin φ + ∂L/∂B·cos φ
func (m *Model) clockBackward(ws *Workspace, n int) {
	ck, g := m.clock, ws.tr.grad
	L, H, C := m.cfg.Lookback, m.cfg.Horizon, m.cfg.Channels
	M := len(ck.ids)
	dab := ws.tr.dab[:2*M*C]
	for b := range n {
		clear(dab)
		gemm.TN(2*M, C, L+H, ck.tab, 2*M, ws.tr.dq[b*(L+H)*C:(b+1)*(L+H)*C], C, dab, C)
		for j, id := range ck.ids {
			rh := &m.Meta.Rhythms[ck.rhythm[j]]
			k := ck.freq[j] * rh.PeriodSteps
			dA, dB := dab[2*j*C:(2*j+1)*C], dab[(2*j+1)*C:(2*j+2)*C]
			ga, gb := g.Clock[2*id*C:(2*id+1)*C], g.Clock[(2*id+1)*C:(2*id+2)*C]
			for c := range C {
				rho := phaseAt(rh, ws.tau[b*C+c])
				sn, cs := math.Sincos(2 * math.Pi * math.Mod(k*rho, 1))
				ga[c] += dA[c]*cs - dB[c]*sn
				gb[c] += dA[c]*sn + dB[c]*cs
			}
		}
	}
}

// rhythmTerm writes what rhythm frequency id adds for window i of the last
// pass besides its head, over the horizon, to dst (H × C, normalised
// units): its clock term and its band head. It reports whether the
// frequency belongs to a rhythm (only those have either).
func (ws *Workspace) rhythmTerm(i, id int, dst []float64) bool {
	m := ws.m
	ck := m.clock
	if ck.member[id] < 0 {
		return false
	}
	L, H, C := m.cfg.Lookback, m.cfg.Horizon, m.cfg.Channels
	M, j := len(ck.ids), ck.member[id]
	if ck.active {
		ab := ws.ab[i*2*M*C : (i+1)*2*M*C]
		A, B := ab[2*j*C:(2*j+1)*C], ab[(2*j+1)*C:(2*j+2)*C]
		for h := range H {
			row := ck.tab[(L+h)*2*M:]
			cs, sn := row[2*j], row[2*j+1]
			for c := range C {
				dst[h*C+c] = A[c]*cs + B[c]*sn
			}
		}
	} else {
		clear(dst[:H*C])
	}
	z := ws.zfix[i*2*M*C : (i+1)*2*M*C]
	zc, zs := z[2*j*C:(2*j+1)*C], z[(2*j+1)*C:(2*j+2)*C]
	pc, ps := m.params.Band[2*id*H:(2*id+1)*H], m.params.Band[(2*id+1)*H:(2*id+2)*H]
	for h := range H {
		for c := range C {
			dst[h*C+c] += pc[h]*zc[c] + ps[h]*zs[c]
		}
	}
	return true
}
