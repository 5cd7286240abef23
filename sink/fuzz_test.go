package sink_test

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/sink/sinktest"
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

// checkDecodeError fails unless err is a *sink.DecodeError.
func checkDecodeError(t *testing.T, err error) {
	t.Helper()
	if _, ok := err.(*sink.DecodeError); !ok {
		t.Fatalf("error %v is a %T, want *sink.DecodeError", err, err)
	}
}

// sameAfterReencoding checks that again, decoded from the encoding of got,
// is got. A lone field decoded from a one-key "values" object comes back as
// "value", the single-field layout's name.
func sameAfterReencoding(t *testing.T, got, again sink.Forecast) {
	t.Helper()
	if len(got.Fields) == 1 {
		got.Fields = again.Fields
	}
	if d := sinktest.Diff(again, got); d != "" {
		t.Fatalf("decode(encode(decode(x))) ≠ decode(x): %s", d)
	}
}

func jsonSeeds() [][]byte {
	s, m := exampleSingle(), exampleMulti()
	var out [][]byte
	for _, f := range []*sink.Forecast{&s, &m} {
		b, _ := sink.AppendForecastJSON(nil, f)
		out = append(out, b)
	}
	return out
}

func FuzzDecodeForecastJSON(f *testing.F) {
	seed(f, jsonSeeds()...)
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := sink.DecodeForecastJSON(data)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		b, err := sink.AppendForecastJSON(nil, &got)
		if err != nil {
			t.Fatalf("a decoded forecast does not encode: %v", err)
		}
		again, err := sink.DecodeForecastJSON(b)
		if err != nil {
			t.Fatalf("DecodeForecastJSON(%s): %v", b, err)
		}
		sameAfterReencoding(t, got, again)
	})
}

func FuzzDecodeAttributionJSON(f *testing.F) {
	var valid [][]byte
	for _, fc := range []sink.Forecast{exampleSingle(), exampleMulti()} {
		for _, mode := range []sink.AttributionMode{sink.AttributionsFull, sink.AttributionsSummary} {
			b, _ := sink.AppendAttributionJSON(nil, &fc, mode)
			valid = append(valid, b)
		}
	}
	seed(f, valid...)
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := sink.DecodeAttributionJSON(data)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		mode := sink.AttributionsFull
		if got.Residual == nil {
			mode = sink.AttributionsSummary
		}
		b, err := sink.AppendAttributionJSON(nil, &got, mode)
		if err != nil {
			t.Fatalf("a decoded attribution does not encode: %v", err)
		}
		again, err := sink.DecodeAttributionJSON(b)
		if err != nil {
			t.Fatalf("DecodeAttributionJSON(%s): %v", b, err)
		}
		sameAfterReencoding(t, got, again)
	})
}

func FuzzDecodeForecastArrow(f *testing.F) {
	enc := sink.NewArrowEncoder(nil)
	var valid [][]byte
	for _, fc := range []sink.Forecast{exampleSingle(), exampleMulti()} {
		b, _ := enc.AppendForecast(nil, &fc)
		valid = append(valid, b)
	}
	seed(f, valid...)
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		got, err := sink.DecodeForecastArrow(data, mem)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		mem.AssertSize(t, 0)
		enc := sink.NewArrowEncoder(mem)
		defer enc.Release()
		b, err := enc.AppendForecast(nil, &got)
		if err != nil {
			t.Fatalf("a decoded forecast does not encode: %v", err)
		}
		again, err := sink.DecodeForecastArrow(b, mem)
		if err != nil {
			t.Fatal(err)
		}
		sameAfterReencoding(t, got, again)
	})
}

func FuzzDecodeAttributionArrow(f *testing.F) {
	enc := sink.NewArrowEncoder(nil)
	var valid [][]byte
	for _, fc := range []sink.Forecast{exampleSingle(), exampleMulti()} {
		for _, mode := range []sink.AttributionMode{sink.AttributionsFull, sink.AttributionsSummary} {
			b, _ := enc.AppendAttribution(nil, &fc, mode)
			valid = append(valid, b)
		}
	}
	seed(f, valid...)
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		got, err := sink.DecodeAttributionArrow(data, mem)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		mem.AssertSize(t, 0)
		mode := sink.AttributionsFull
		if got.Residual == nil {
			mode = sink.AttributionsSummary
		}
		enc := sink.NewArrowEncoder(mem)
		defer enc.Release()
		b, err := enc.AppendAttribution(nil, &got, mode)
		if err != nil {
			t.Fatalf("a decoded attribution does not encode: %v", err)
		}
		again, err := sink.DecodeAttributionArrow(b, mem)
		if err != nil {
			t.Fatal(err)
		}
		sameAfterReencoding(t, got, again)
	})
}
