package wire_test

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/freqlens/freqlens/wire"
	"github.com/freqlens/freqlens/wire/wiretest"
)

// seed adds the corpus every decoder is fuzzed from: an empty input, and per
// valid message the message, its first half, and the message followed by
// garbage.
func seed(f *testing.F, valid ...[]byte) {
	f.Add([]byte{})
	for _, v := range valid {
		f.Add(v)
		f.Add(v[:len(v)/2])
		f.Add(append(append([]byte(nil), v...), "\x00garbage}"...))
	}
}

// checkDecodeError fails unless err is a *wire.DecodeError.
func checkDecodeError(t *testing.T, err error) {
	t.Helper()
	if _, ok := err.(*wire.DecodeError); !ok {
		t.Fatalf("error %v is a %T, want *wire.DecodeError", err, err)
	}
}

// sameAfterReencoding checks that again, decoded from the encoding of got,
// is got. A lone field decoded from a one-key "values" object comes back as
// "value", the single-field layout's name.
func sameAfterReencoding(t *testing.T, got, again wire.Forecast) {
	t.Helper()
	if len(got.Fields) == 1 {
		got.Fields = again.Fields
	}
	if d := wiretest.Diff(again, got); d != "" {
		t.Fatalf("decode(encode(decode(x))) ≠ decode(x): %s", d)
	}
}

// exampleMultiAllChannels is exampleMulti with a residual that reads every
// field.
func exampleMultiAllChannels() wire.Forecast {
	f := exampleMulti()
	f.ResidualAllChannels = true
	return f
}

func jsonSeeds() [][]byte {
	s, m := exampleSingle(), exampleMulti()
	si, mi := wiretest.ExampleIntervals(), wiretest.ExampleMultiIntervals()
	var out [][]byte
	for _, f := range []*wire.Forecast{&s, &m, &si, &mi} {
		b, _ := wire.AppendForecastJSON(nil, f)
		out = append(out, b)
	}
	return out
}

func FuzzDecodeForecastJSON(f *testing.F) {
	seed(f, jsonSeeds()...)
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := wire.DecodeForecastJSON(data)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		b, err := wire.AppendForecastJSON(nil, &got)
		if err != nil {
			t.Fatalf("a decoded forecast does not encode: %v", err)
		}
		again, err := wire.DecodeForecastJSON(b)
		if err != nil {
			t.Fatalf("DecodeForecastJSON(%s): %v", b, err)
		}
		sameAfterReencoding(t, got, again)
	})
}

func FuzzDecodeAttributionJSON(f *testing.F) {
	var valid [][]byte
	for _, fc := range []wire.Forecast{exampleSingle(), exampleMulti(), exampleMultiAllChannels()} {
		for _, mode := range []wire.AttributionMode{wire.AttributionsFull, wire.AttributionsSummary} {
			b, _ := wire.AppendAttributionJSON(nil, &fc, mode)
			valid = append(valid, b)
		}
	}
	seed(f, valid...)
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := wire.DecodeAttributionJSON(data)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		mode := wire.AttributionsFull
		if got.Residual == nil {
			mode = wire.AttributionsSummary
		}
		b, err := wire.AppendAttributionJSON(nil, &got, mode)
		if err != nil {
			t.Fatalf("a decoded attribution does not encode: %v", err)
		}
		again, err := wire.DecodeAttributionJSON(b)
		if err != nil {
			t.Fatalf("DecodeAttributionJSON(%s): %v", b, err)
		}
		sameAfterReencoding(t, got, again)
	})
}

func FuzzDecodeForecastArrow(f *testing.F) {
	enc := wire.NewArrowEncoder(nil)
	var valid [][]byte
	for _, fc := range []wire.Forecast{exampleSingle(), exampleMulti(), wiretest.ExampleIntervals(), wiretest.ExampleMultiIntervals()} {
		b, _ := enc.AppendForecast(nil, &fc)
		valid = append(valid, b)
	}
	seed(f, valid...)
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		got, err := wire.DecodeForecastArrow(data, mem)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		mem.AssertSize(t, 0)
		enc := wire.NewArrowEncoder(mem)
		defer enc.Release()
		b, err := enc.AppendForecast(nil, &got)
		if err != nil {
			t.Fatalf("a decoded forecast does not encode: %v", err)
		}
		again, err := wire.DecodeForecastArrow(b, mem)
		if err != nil {
			t.Fatal(err)
		}
		sameAfterReencoding(t, got, again)
	})
}

func FuzzDecodeAttributionArrow(f *testing.F) {
	enc := wire.NewArrowEncoder(nil)
	var valid [][]byte
	for _, fc := range []wire.Forecast{exampleSingle(), exampleMulti(), exampleMultiAllChannels()} {
		for _, mode := range []wire.AttributionMode{wire.AttributionsFull, wire.AttributionsSummary} {
			b, _ := enc.AppendAttribution(nil, &fc, mode)
			valid = append(valid, b)
		}
	}
	seed(f, valid...)
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		got, err := wire.DecodeAttributionArrow(data, mem)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		mem.AssertSize(t, 0)
		mode := wire.AttributionsFull
		if got.Residual == nil {
			mode = wire.AttributionsSummary
		}
		enc := wire.NewArrowEncoder(mem)
		defer enc.Release()
		b, err := enc.AppendAttribution(nil, &got, mode)
		if err != nil {
			t.Fatalf("a decoded attribution does not encode: %v", err)
		}
		again, err := wire.DecodeAttributionArrow(b, mem)
		if err != nil {
			t.Fatal(err)
		}
		sameAfterReencoding(t, got, again)
	})
}
