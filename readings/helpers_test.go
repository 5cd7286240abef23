package readings_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/freqlens/freqlens/readings"
	"github.com/freqlens/freqlens/readings/readingstest"
)

// testNow is the clock of decoder tests.
var testNow = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

func testClock() time.Time { return testNow }

// testIngest is the message time of decoder tests.
var testIngest = time.Date(2026, 1, 5, 9, 0, 0, 5_000_000, time.UTC)

// row is one decoded row, compared bit for bit by sameRows.
type row = readingstest.Row

var sameRows = readingstest.SameRows

// decodeOne decodes one message with a fresh builder and returns its rows.
// It checks the decoder's contract: an error is a *DecodeError with a
// known reason, and a failed decode appends nothing.
func decodeOne(t testing.TB, mem memory.Allocator, dec readings.Decoder, values []string, key, value []byte) ([]row, error) {
	t.Helper()
	rb := array.NewRecordBuilder(mem, readings.Schema(values...))
	defer rb.Release()
	err := dec.Decode(rb, key, value, testIngest)
	rec := rb.NewRecord()
	defer rec.Release()
	if err != nil {
		var de *readings.DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("Decode error %v (%T) is not a *DecodeError", err, err)
		}
		if _, ok := err.(*readings.DecodeError); !ok {
			t.Fatalf("Decode error is %T, want *DecodeError itself", err)
		}
		if !slices.Contains(readings.Reasons, de.Reason) {
			t.Fatalf("Decode reason %q is not one of %q", de.Reason, readings.Reasons)
		}
		if rec.NumRows() != 0 {
			t.Fatalf("failed Decode (%v) appended %d rows", err, rec.NumRows())
		}
		return nil, err
	}
	return readingstest.Rows(t, rec), nil
}

func reasonOf(err error) string {
	var de *readings.DecodeError
	if errors.As(err, &de) {
		return de.Reason
	}
	if err != nil {
		return "not a DecodeError: " + err.Error()
	}
	return ""
}

// encode encodes rs in cfg.Format, one message per reading (one message
// for all of them in Arrow).
func encode(t testing.TB, cfg readings.Config, rs []readings.Reading) [][]byte {
	t.Helper()
	switch cfg.Format {
	case readings.FormatCSV:
		var msgs [][]byte
		for _, r := range rs {
			msgs = append(msgs, readings.AppendCSV(nil, r, cfg))
		}
		return msgs
	case readings.FormatArrow:
		b, err := readings.AppendArrow(nil, rs, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		return [][]byte{b}
	default:
		var msgs [][]byte
		for _, r := range rs {
			msgs = append(msgs, readings.AppendJSON(nil, r, cfg))
		}
		return msgs
	}
}

// checkRoundTrip re-encodes rows and decodes them again: encode∘decode must
// be the identity.
func checkRoundTrip(t testing.TB, cfg readings.Config, dec readings.Decoder, rows []row) {
	t.Helper()
	if len(rows) == 0 {
		return
	}
	var got []row
	for _, msg := range encode(t, cfg, readingstest.ToReadings(rows)) {
		rs, err := decodeOne(t, memory.DefaultAllocator, dec, cfg.ValueFields, nil, msg)
		if err != nil {
			t.Fatalf("decoding the re-encoded %q: %v", msg, err)
		}
		got = append(got, rs...)
	}
	for i := range rows {
		rows[i].Ingest = testIngest.UnixMilli()
	}
	if !sameRows(got, rows) {
		t.Fatalf("encode∘decode changed the rows:\n got %v\nwant %v", got, rows)
	}
}

// randomReadings draws readings that every encoder can carry: valid UTF-8
// series (with quotes, commas, spaces, escapes), times over the whole range
// the decoders accept, finite values of every kind.
func randomReadings(rng *rand.Rand, n, channels int) []readings.Reading {
	pieces := []string{"s", "-", "17", " ", ",", `"`, `\`, "\n", "\t", "é", "日本", "😀", "\u2028", "\x01", "x"}
	rs := make([]readings.Reading, n)
	for i := range rs {
		var sb strings.Builder
		for k := 1 + rng.IntN(6); k > 0; k-- {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		var ms int64
		switch rng.IntN(4) {
		case 0:
			ms = testNow.UnixMilli() - rng.Int64N(1e12)
		case 1:
			ms = minRFC3339Ms + rng.Int64N(maxRFC3339Ms-minRFC3339Ms)
			if ms > testNow.UnixMilli() {
				ms = testNow.UnixMilli() - rng.Int64N(1e6)
			}
		case 2:
			ms = -rng.Int64N(math.MaxInt64)
		default:
			ms = testNow.UnixMilli() + rng.Int64N(int64(time.Hour/time.Millisecond))
		}
		vals := make([]float64, channels)
		for j := range vals {
			switch rng.IntN(6) {
			case 0:
				vals[j] = math.Float64frombits(rng.Uint64())
				if math.IsNaN(vals[j]) || math.IsInf(vals[j], 0) {
					vals[j] = 1
				}
			case 1:
				vals[j] = math.Copysign(0, -1)
			case 2:
				vals[j] = math.SmallestNonzeroFloat64 * float64(rng.IntN(100))
			case 3:
				vals[j] = float64(rng.IntN(1000))
			case 4:
				vals[j] = math.MaxFloat64 * (rng.Float64()*2 - 1)
			default:
				vals[j] = rng.NormFloat64() * 100
			}
		}
		rs[i] = readings.Reading{Series: sb.String(), Time: time.UnixMilli(ms), Values: vals}
	}
	return rs
}

// configWith returns readings.DefaultConfig changed by edit (nil: none).
func configWith(edit func(*readings.Config)) readings.Config {
	cfg := readings.DefaultConfig()
	if edit != nil {
		edit(&cfg)
	}
	return cfg
}

// The times the encoders write as RFC 3339 (years 0000 to 9999), in epoch
// milliseconds; others are written as numbers.
const (
	minRFC3339Ms = -62167219200000 // 0000-01-01T00:00:00Z
	maxRFC3339Ms = 253402300799999 // 9999-12-31T23:59:59.999Z
)

// rowsFromReadings returns the rows rs decode to, with the tests' ingest
// time.
func rowsFromReadings(rs []readings.Reading) []row {
	return readingstest.FromReadings(rs, testIngest.UnixMilli())
}
