package sink_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/freqlens/freqlens/sink"
	"github.com/freqlens/freqlens/sink/sinktest"
	"github.com/freqlens/freqlens/wire"
	"github.com/freqlens/freqlens/wire/wiretest"
)

func TestWriterModes(t *testing.T) {
	f := wiretest.Example()
	forecastLine, _ := wire.AppendForecastJSON(nil, &f)
	line := func(mode wire.AttributionMode) []byte {
		b, _ := wire.AppendAttributionJSON(nil, &f, mode)
		return b
	}
	for _, tc := range []struct {
		mode  wire.AttributionMode
		lines [][]byte
	}{
		{wire.AttributionsFull, [][]byte{forecastLine, line(wire.AttributionsFull)}},
		{wire.AttributionsSummary, [][]byte{forecastLine, line(wire.AttributionsSummary)}},
		{wire.AttributionsOff, [][]byte{forecastLine}},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			var buf bytes.Buffer
			bw := bufio.NewWriter(&buf) // Write must flush it
			w, err := sink.NewWriter(bw, sink.WriterConfig{Attributions: tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(context.Background(), []wire.Forecast{f}); err != nil {
				t.Fatal(err)
			}
			var want []byte
			for _, l := range tc.lines {
				want = append(append(want, l...), '\n')
			}
			if got := buf.Bytes(); !bytes.Equal(got, want) {
				t.Errorf("output:\n%s\nwant\n%s", got, want)
			}
			fs, err := sinktest.ReadLines(buf.Bytes())
			if err != nil || len(fs) != 1 {
				t.Errorf("ReadLines = %d forecasts, %v; want 1", len(fs), err)
			}
		})
	}
	// A forecast of a pipeline wired SharesOnly carries shares, not per-step
	// parts: a summary writer writes it, a full one refuses it.
	shares := wire.Clone(f)
	shares.Residual = nil
	for k := range shares.Frequencies {
		shares.Frequencies[k].Values = nil
	}
	for k := range shares.Rhythms {
		shares.Rhythms[k].Values = nil
	}
	for mode, ok := range map[wire.AttributionMode]bool{wire.AttributionsSummary: true, wire.AttributionsOff: true, wire.AttributionsFull: false} {
		var buf bytes.Buffer
		w, err := sink.NewWriter(&buf, sink.WriterConfig{Attributions: mode})
		if err != nil {
			t.Fatal(err)
		}
		err = w.Write(context.Background(), []wire.Forecast{shares})
		if ok && err != nil {
			t.Errorf("%s writer refused a forecast with shares only: %v", mode, err)
		}
		if !ok && (err == nil || !errors.Is(err, wire.ErrInvalid) || buf.Len() != 0) {
			t.Errorf("%s writer: a forecast with shares only gave %v and wrote %d bytes, want it refused as invalid and nothing written", mode, err, buf.Len())
		}
	}
	if _, err := sink.NewWriter(&bytes.Buffer{}, sink.WriterConfig{Attributions: "most"}); err == nil || !strings.Contains(err.Error(), `"most"`) {
		t.Errorf("NewWriter with a bad mode = %v, want an error naming it", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriterError(t *testing.T) {
	w, err := sink.NewWriter(failingWriter{}, sink.WriterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(context.Background(), []wire.Forecast{wiretest.Example()}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Write = %v, want the writer's error", err)
	}
}

func TestMemoryFailWith(t *testing.T) {
	m := sink.NewMemory()
	boom := errors.New("boom")
	m.FailWith(boom)
	if err := m.Write(context.Background(), []wire.Forecast{wiretest.Example()}); !errors.Is(err, boom) {
		t.Errorf("Write = %v, want boom", err)
	}
	m.FailWith(nil)
	if err := m.Write(context.Background(), []wire.Forecast{wiretest.Example()}); err != nil || m.Len() != 1 {
		t.Errorf("Write = %v, Len = %d; want nil, 1", err, m.Len())
	}
}

func TestSinkFunc(t *testing.T) {
	var n int
	var s sink.Sink = sink.SinkFunc(func(_ context.Context, fs []wire.Forecast) error {
		n += len(fs)
		return nil
	})
	if err := s.Write(context.Background(), []wire.Forecast{wiretest.Example(), wiretest.ExampleMulti()}); err != nil || n != 2 {
		t.Errorf("Write = %v, n = %d; want nil, 2", err, n)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Errorf("Close = %v", err)
	}
}
