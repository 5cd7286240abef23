package calibration

import (
	"testing"
	"time"
)

// FuzzStateRecord: the state topic's decoders never panic, and what they
// accept encodes back to the same bytes.
func FuzzStateRecord(f *testing.F) {
	s := Series{Lo: []float64{0.5, 0.5}, Hi: []float64{0.5, 0.5}, Away: []int16{-3}, Seen: []uint32{7}, Scale: []float64{1, 2, 3}, Last: 123456}
	s.Fresh, s.Calibrated, s.Completed = true, true, 17
	v, _ := encodeSeries(seriesHeader{fingerprint: 42, replica: "pod-7", levels: []float64{0.8, 0.95}, H: 6, C: 1}, s)
	f.Add(v)
	sc := &Snapshot{Levels: []float64{0.8}, H: 6, C: 1, Newest: time.Unix(0, 99), Model: 3, AbsErr: make([]float64, 6),
		Weight: make([]float64, 6), ProfSum: []float64{1, 2}, ProfW: []float64{3, 4}, ProfAt: []int64{-5, 6}, Steer: []float64{1}, Fresh: 2}
	f.Add(encodePool("pod-7", sc, time.Unix(0, 100)))
	f.Add([]byte("FLS\x01\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		// What a decoder accepts it reads the same way again once encoded
		// (an input may spell a varint longer than the encoder does).
		if h, s, _, err := decodeSeries(b); err == nil {
			once, sum := encodeSeries(h, s)
			h2, s2, sum2, err := decodeSeries(once)
			twice, _ := encodeSeries(h2, s2)
			if err != nil || string(twice) != string(once) || sum != sum2 {
				t.Fatalf("a series record decodes to %+v %+v, which does not read back (%v)", h, s, err)
			}
		}
		if replica, sc, written, err := decodePool(b); err == nil {
			once := encodePool(replica, &sc, written)
			r2, sc2, w2, err := decodePool(once)
			if err != nil || string(encodePool(r2, &sc2, w2)) != string(once) {
				t.Fatalf("a pooled record decodes to %+v, which does not read back (%v)", sc, err)
			}
		}
	})
}
