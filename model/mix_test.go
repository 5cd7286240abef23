package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// mixTwins returns a random model with rhythms and a clock, and the same
// model with the channel mix added at zero (and random weights for the
// residual's reading of the mix).
func mixTwins(t *testing.T, seed uint64) (plain, mixed *Model) {
	t.Helper()
	cfg := Config{Lookback: 12, Horizon: 5, Channels: 3, Hidden: 4, Frequencies: 9, TopK: 6, ScorerHidden: 3, HeadHidden: 4, ResidualHidden: 5}
	plain = withRhythms(randomModel(t, cfg, seed), true)
	cfg = plain.Config()
	cfg.ChannelMix = true
	var data []float64
	off := 0
	byName := map[string][]float64{}
	for _, ts := range Tensors(plain.cfg) {
		byName[ts.Name] = plain.params.Data[off : off+ts.Size()]
		off += ts.Size()
	}
	rng := rand.New(rand.NewPCG(seed, 17))
	for _, ts := range Tensors(cfg) {
		v, ok := byName[ts.Name]
		switch {
		case ts.Name == "residual.w1":
			// [R₁ of the plain model; a block for the mix]
			data = append(data, v...)
			for range ts.Size() - len(v) {
				data = append(data, 0.5*rng.NormFloat64())
			}
		case ok:
			data = append(data, v...)
		default:
			data = append(data, make([]float64, ts.Size())...)
		}
	}
	mixed, err := Assemble(cfg, plain.Meta, data)
	if err != nil {
		t.Fatal(err)
	}
	return plain, mixed
}

// TestChannelMixStartsAsTheModelWithout: at zero the mix leaves every
// forecast as the model without it computes it (to rounding: the residual's
// first layer sums over twice the inputs), so a model trained with the mix
// starts where one without it does.
func TestChannelMixStartsAsTheModelWithout(t *testing.T) {
	for seed := range uint64(3) {
		plain, mixed := mixTwins(t, seed)
		x, _ := randomBatch(plain.cfg, 7, seed+50)
		ends := windowEnds(plain, 7, seed)
		a := plain.Forward(plain.NewWorkspace(7), nil, x, ends)
		b := mixed.Forward(mixed.NewWorkspace(7), nil, x, ends)
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-12*(1+math.Abs(a[i])) {
				t.Fatalf("seed %d: forecast %d is %v with the mix at zero, %v without it", seed, i, b[i], a[i])
			}
		}
	}
}

// TestChannelMixReadsTheOtherChannels: without the mix a channel's
// residual part reads only its own window, so changing another channel's
// window leaves it exactly as it was; with the mix's weight from channel 0
// to channel 1 it moves, and channel 2, which reads nothing of channel 0,
// stays.
func TestChannelMixReadsTheOtherChannels(t *testing.T) {
	plain, mixed := mixTwins(t, 5)
	C := mixed.cfg.Channels
	mixed.params.MixW[1*C+0] = 0.8 // M₀: channel 1 reads channel 0
	x, _ := randomBatch(plain.cfg, 1, 60)
	y := slices.Clone(x)
	for s := range plain.cfg.Lookback {
		y[s*C] += 0.7 * math.Sin(float64(s)) // channel 0 only
	}
	ends := windowEnds(plain, 1, 5)
	residual := func(m *Model, win []float64) []float64 {
		ws := m.NewWorkspace(1)
		m.Forward(ws, nil, win, ends)
		return slices.Clone(ws.Attribution(0, nil).Residual)
	}
	moved := func(m *Model, c int) bool {
		a, b := residual(m, x), residual(m, y)
		for h := range m.cfg.Horizon {
			if a[h*C+c] != b[h*C+c] {
				return true
			}
		}
		return false
	}
	if moved(plain, 1) || moved(plain, 2) {
		t.Error("without the mix, channel 0's window moved another channel's residual part")
	}
	if !moved(mixed, 1) {
		t.Error("with the mix from channel 0 to channel 1, channel 0's window left channel 1's residual part as it was")
	}
	if moved(mixed, 2) {
		t.Error("channel 2 reads nothing of channel 0, yet its residual part moved")
	}
}
