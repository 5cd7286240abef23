package stream

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// testNow is the clock of decoder tests.
var testNow = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

func testClock() time.Time { return testNow }

// testIngest is the message time of decoder tests.
var testIngest = time.Date(2026, 1, 5, 9, 0, 0, 5_000_000, time.UTC)

// row is one decoded row, compared bit for bit.
type row struct {
	Series string
	TS     int64
	Ingest int64
	Values []float64
}

func (r row) String() string {
	return fmt.Sprintf("{%q %s ingest=%d %v}", r.Series, formatMs(r.TS), r.Ingest, r.Values)
}

func sameRows(a, b []row) bool {
	return slices.EqualFunc(a, b, func(x, y row) bool {
		return x.Series == y.Series && x.TS == y.TS && x.Ingest == y.Ingest &&
			slices.EqualFunc(x.Values, y.Values, func(u, v float64) bool { return math.Float64bits(u) == math.Float64bits(v) })
	})
}

// rowsOf reads every row of a batch record.
func rowsOf(t testing.TB, rec arrow.Record) []row {
	t.Helper()
	if rec.NumCols() < FirstValueColumn {
		t.Fatalf("record has %d columns", rec.NumCols())
	}
	series := rec.Column(SeriesColumn).(*array.String)
	ts := rec.Column(TimeColumn).(*array.Timestamp)
	ing := rec.Column(IngestColumn).(*array.Timestamp)
	var rows []row
	for i := 0; i < int(rec.NumRows()); i++ {
		r := row{Series: strings.Clone(series.Value(i)), TS: int64(ts.Value(i)), Ingest: int64(ing.Value(i))}
		for c := FirstValueColumn; c < int(rec.NumCols()); c++ {
			r.Values = append(r.Values, rec.Column(c).(*array.Float64).Value(i))
		}
		rows = append(rows, r)
	}
	for c := 0; c < int(rec.NumCols()); c++ {
		if n := rec.Column(c).NullN(); n != 0 {
			t.Errorf("column %d has %d nulls", c, n)
		}
	}
	return rows
}

// decodeOne decodes one message with a fresh builder and returns its rows.
// It checks the decoder's contract: an error is a *DecodeError with a
// known reason, and a failed decode appends nothing.
func decodeOne(t testing.TB, mem memory.Allocator, dec Decoder, values []string, key, value []byte) ([]row, error) {
	t.Helper()
	rb := array.NewRecordBuilder(mem, Schema(values...))
	defer rb.Release()
	err := dec.Decode(rb, key, value, testIngest)
	rec := rb.NewRecord()
	defer rec.Release()
	if err != nil {
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("Decode error %v (%T) is not a *DecodeError", err, err)
		}
		if _, ok := err.(*DecodeError); !ok {
			t.Fatalf("Decode error is %T, want *DecodeError itself", err)
		}
		if !slices.Contains(Reasons, de.Reason) {
			t.Fatalf("Decode reason %q is not one of %q", de.Reason, Reasons)
		}
		if rec.NumRows() != 0 {
			t.Fatalf("failed Decode (%v) appended %d rows", err, rec.NumRows())
		}
		return nil, err
	}
	return rowsOf(t, rec), nil
}

func reasonOf(err error) string {
	var de *DecodeError
	if errors.As(err, &de) {
		return de.Reason
	}
	if err != nil {
		return "not a DecodeError: " + err.Error()
	}
	return ""
}

// readingsOf turns rows into readings (as the encoders take them).
func readingsOf(rows []row) []Reading {
	rs := make([]Reading, len(rows))
	for i, r := range rows {
		rs[i] = Reading{Series: r.Series, Time: time.UnixMilli(r.TS), Values: r.Values}
	}
	return rs
}

// encode encodes rs in cfg.Format, one message per reading (one message
// for all of them in Arrow).
func encode(t testing.TB, cfg Config, rs []Reading) [][]byte {
	t.Helper()
	switch cfg.withDefaults().Format {
	case FormatCSV:
		var msgs [][]byte
		for _, r := range rs {
			msgs = append(msgs, AppendCSV(nil, r, cfg))
		}
		return msgs
	case FormatArrow:
		b, err := AppendArrow(nil, rs, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		return [][]byte{b}
	default:
		var msgs [][]byte
		for _, r := range rs {
			msgs = append(msgs, AppendJSON(nil, r, cfg))
		}
		return msgs
	}
}

// checkRoundTrip re-encodes rows and decodes them again: encode∘decode must
// be the identity.
func checkRoundTrip(t testing.TB, cfg Config, dec Decoder, rows []row) {
	t.Helper()
	if len(rows) == 0 {
		return
	}
	values := cfg.withDefaults().ValueFields
	var got []row
	for _, msg := range encode(t, cfg, readingsOf(rows)) {
		rs, err := decodeOne(t, memory.DefaultAllocator, dec, values, nil, msg)
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
func randomReadings(rng *rand.Rand, n, channels int) []Reading {
	pieces := []string{"s", "-", "17", " ", ",", `"`, `\`, "\n", "\t", "é", "日本", "😀", "\u2028", "\x01", "x"}
	rs := make([]Reading, n)
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
		rs[i] = Reading{Series: sb.String(), Time: time.UnixMilli(ms), Values: vals}
	}
	return rs
}

func rowsFromReadings(rs []Reading) []row {
	rows := make([]row, len(rs))
	for i, r := range rs {
		rows[i] = row{Series: r.Series, TS: r.Time.UnixMilli(), Ingest: testIngest.UnixMilli(), Values: r.Values}
	}
	return rows
}
