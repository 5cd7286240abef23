package readings_test

import (
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/freqlens/freqlens/readings"
)

// fuzzReadings are the valid messages the corpora start from.
var fuzzReadings = []readings.Reading{
	{Series: "s-17", Time: time.UnixMilli(t0), Values: []float64{412}},
	{Series: "a,\"b\" ü", Time: time.UnixMilli(t0 + 250), Values: []float64{-0.001}},
}

// seedDecoder adds the standard corpus: an empty input, a truncated input,
// valid messages and a valid message followed by garbage.
func seedDecoder(f *testing.F, valid ...[]byte) {
	f.Add([]byte(nil), []byte(nil))
	f.Add([]byte("k"), valid[0][:len(valid[0])/2])
	for _, v := range valid {
		f.Add([]byte("k"), v)
	}
	f.Add([]byte("k"), append(append([]byte(nil), valid[0]...), "\x00garbage}\n,"...))
}

// fuzzDecode checks one input against the invariants of every decoder: it
// never panics; every error is a *DecodeError with one of Reasons and
// appends nothing; a message that decodes re-encodes, with the package's
// encoder, to one that decodes to the same rows, floats compared with
// math.Float64bits (encode∘decode is the identity).
func fuzzDecode(t *testing.T, cfg readings.Config, dec readings.Decoder, key, value []byte) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows, err := decodeOne(t, mem, dec, cfg.ValueFields, key, value)
	if err == nil {
		checkRoundTrip(t, cfg, dec, rows)
	}
}

// FuzzDecodeJSON fuzzes JSONDecoder. Invariants (see fuzzDecode): it never
// panics; every error is a *DecodeError; encode∘decode is the identity.
func FuzzDecodeJSON(f *testing.F) {
	cfg := readings.DefaultConfig()
	var valid [][]byte
	for _, r := range fuzzReadings {
		valid = append(valid, readings.AppendJSON(nil, r, cfg))
	}
	valid = append(valid, []byte(`{"ts":"2026-01-05T09:00:00.5+01:00","value":"1e3","x":[{"y":null}]}`))
	seedDecoder(f, valid...)
	dec := newJSON(f, cfg)
	f.Fuzz(func(t *testing.T, key, value []byte) { fuzzDecode(t, cfg, dec, key, value) })
}

// FuzzDecodeCSV fuzzes CSVDecoder. Invariants (see fuzzDecode): it never
// panics; every error is a *DecodeError; encode∘decode is the identity.
func FuzzDecodeCSV(f *testing.F) {
	cfg := configWith(func(c *readings.Config) { c.Format = readings.FormatCSV })
	var valid [][]byte
	for _, r := range fuzzReadings {
		valid = append(valid, readings.AppendCSV(nil, r, cfg))
	}
	valid = append(valid, []byte(" \"x\"\"y\" , 1767600000000 ,1e-7\r\n"))
	seedDecoder(f, valid...)
	dec := newCSV(f, cfg)
	f.Fuzz(func(t *testing.T, key, value []byte) { fuzzDecode(t, cfg, dec, key, value) })
}

// FuzzDecodeArrow fuzzes ArrowDecoder. Invariants (see fuzzDecode): it
// never panics; every error is a *DecodeError; encode∘decode is the
// identity.
func FuzzDecodeArrow(f *testing.F) {
	cfg := configWith(func(c *readings.Config) { c.Format = readings.FormatArrow })
	many, err := readings.AppendArrow(nil, fuzzReadings, cfg, nil)
	if err != nil {
		f.Fatal(err)
	}
	empty, err := readings.AppendArrow(nil, nil, cfg, nil)
	if err != nil {
		f.Fatal(err)
	}
	seedDecoder(f, many, empty)
	dec := newArrow(f, cfg)
	f.Fuzz(func(t *testing.T, key, value []byte) { fuzzDecode(t, cfg, dec, key, value) })
}
