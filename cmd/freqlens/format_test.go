package main

import (
	"testing"
	"time"
)

func TestReadingKeepsDigitsAtEveryScale(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0.000"}, {12.3456, "12.346"}, {-0.5, "-0.500"}, {0.01, "0.010"},
		{1.234e-12, "1.234e-12"}, {-0.004567, "-0.004567"}, {9.87654e9, "9.877e+09"},
	} {
		if got := reading(tc.v); got != tc.want {
			t.Errorf("reading(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
	if got := dateTime(time.Date(2024, 5, 5, 1, 0, 0, 0, time.FixedZone("", 2*3600))); got != "2024-05-05 01:00:00+02:00" {
		t.Errorf("a time with an offset: %q", got)
	}
	if got := dateTime(time.Date(2024, 5, 5, 1, 0, 0, 0, time.UTC)); got != "2024-05-05 01:00:00" {
		t.Errorf("a UTC time: %q", got)
	}
}
