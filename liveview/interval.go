package liveview

import "github.com/freqlens/freqlens/wire"

// interval is one prediction interval of a forecast as package wire is to
// carry it (wire.Forecast.Intervals []wire.Interval): the central
// probability Level (0.9 for a 90% interval) and the Lower and Upper
// bounds, H×C row-major like Values.
//
// This file is the one place to switch over when wire.Interval exists:
// make interval an alias of wire.Interval and return f.Intervals below.
type interval = struct {
	Level        float64
	Lower, Upper []float64
}

// intervalsOf returns f's prediction intervals, nil when it carries none
// (intervals off, or not calibrated yet). wire.Forecast has no intervals
// yet, so it returns nil; the view draws a band whenever it gets some.
func intervalsOf(f *wire.Forecast) []interval {
	_ = f
	return nil
}
