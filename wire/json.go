package wire

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/freqlens/freqlens/internal/ftoa"
	"github.com/freqlens/freqlens/internal/jsonstr"
)

// AppendForecastJSON appends the forecast-topic JSON message of f to dst and
// returns the extended buffer. With one field:
//
//	{"series":"s-17","ts":"2026-01-05T08:00:00Z","model_version":3,"cadence":"1h0m0s",
//	 "horizon":[{"ts":"2026-01-05T09:00:00Z","value":412.5},…]}
//
// with several, each horizon entry holds "values":{"temp":3.5,"humidity":80.1}
// (fields in f.Fields order) instead of "value". When f has intervals, the
// message ends with them, in f.Intervals order, each bound an array of the
// horizon's steps like the attribution's "residual" (field objects with
// several fields), written at float32 precision (about 7 significant
// digits: the shortest decimal that parses back to float32(bound); null
// beyond ±3.4e38):
//
//	…,"horizon":[…],"intervals":[{"level":0.8,"lower":[398,380.5],"upper":[427,416]},
//	                            {"level":0.95,"lower":[385.5,365],"upper":[440,431.5]}]} Step h's ts is
//
// TS + (h+1)·Cadence. Times are RFC 3339 in UTC with as many fractional digits
// as needed (none for whole seconds), the cadence is Go's duration string,
// numbers are the shortest decimal that parses back to the same float64, and
// NaN and ±Inf are written as null.
//
// It allocates nothing when dst has room. It returns dst unchanged and an
// error when f fails the checks of Validate that concern the forecast (the
// attribution is not looked at).
func AppendForecastJSON(dst []byte, f *Forecast) ([]byte, error) {
	if err := f.checkForecast(); err != nil {
		return dst, fmt.Errorf("wire: encode forecast json: %w: %w", ErrInvalid, err)
	}
	c := len(f.Fields)
	dst = append(dst, `{"series":`...)
	dst = jsonstr.Append(dst, f.Series)
	dst = append(dst, `,"ts":"`...)
	dst = appendTime(dst, f.TS)
	dst = append(dst, `","model_version":`...)
	dst = strconv.AppendInt(dst, f.ModelVersion, 10)
	dst = append(dst, `,"cadence":"`...)
	dst = appendDuration(dst, f.Cadence)
	dst = append(dst, `","horizon":[`...)
	var clock stepClock
	clock.start(f)
	for h := 0; h < f.Horizon; h++ {
		if h > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"ts":"`...)
		dst = clock.append(dst, f, h)
		if c == 1 {
			dst = append(dst, `","value":`...)
			dst = appendFloat(dst, f.Values[h])
		} else {
			dst = append(dst, `","values":`...)
			dst = appendFieldObject(dst, f.Fields, f.Values[h*c:(h+1)*c], 64)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	if len(f.Intervals) > 0 {
		dst = append(dst, `,"intervals":[`...)
		for k := range f.Intervals {
			iv := &f.Intervals[k]
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"level":`...)
			dst = appendLevel(dst, iv.Level)
			dst = append(dst, `,"lower":`...)
			dst = appendSteps(dst, f.Fields, iv.Lower, 32)
			dst = append(dst, `,"upper":`...)
			dst = appendSteps(dst, f.Fields, iv.Upper, 32)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), nil
}

// appendLevel writes a nominal level as the shortest decimal that parses
// back to it ("0.8", "0.95"): the key of the JSON bounds and the suffix of
// the Arrow bound columns.
func appendLevel(dst []byte, level float64) []byte {
	return strconv.AppendFloat(dst, level, 'g', -1, 64)
}

// AppendAttributionJSON appends the attribution-topic JSON message of f to
// dst and returns the extended buffer. In full mode, with one field:
//
//	{"series":"s-17","ts":"2026-01-05T08:00:00Z","model_version":3,"alpha":0.62,
//	 "residual_share":0.12,"residual":[401.5,…],
//	 "frequencies":[{"id":7,"period_steps":24,"period":"24h0m0s","share":0.71,"values":[9.5,…]},…]}
//
// where residual[h] + Σ_k frequencies[k].values[h] = horizon[h].value of the
// forecast message. With several fields every per-step entry is an object
// keyed by field, like the forecast's "values":
//
//	"residual":[{"temp":3.1,"humidity":75},…], "values":[{"temp":0.4,"humidity":5.1},…]
//
// so residual[h][f] + Σ_k frequencies[k].values[h][f] = horizon[h].values[f].
// "residual_share" is Forecast.ResidualShare: with the rhythms' shares and
// those of the frequencies of no rhythm it makes 1. "residual_all_channels":
// true (after "residual_share", only when set) says the residual reads every
// field's leftover (Forecast.ResidualAllChannels). In summary mode
// "residual" and every "values" are left out. Frequencies
// keep the order of f.Frequencies. Numbers, times and durations are written
// as by AppendForecastJSON; the cadence is not part of this message.
//
// It allocates nothing when dst has room. It returns dst unchanged and an
// error when mode is not full or summary, or f fails the checks of Validate
// that concern the attribution in mode (Values and Cadence are not looked
// at; in summary mode neither are Horizon, Fields nor Residual).
func AppendAttributionJSON(dst []byte, f *Forecast, mode AttributionMode) ([]byte, error) {
	if err := checkEncodeMode(mode); err != nil {
		return dst, err
	}
	if err := f.checkAttributionLayout(mode); err != nil {
		return dst, fmt.Errorf("wire: encode attribution json: %w: %w", ErrInvalid, err)
	}
	full := mode == AttributionsFull
	dst = append(dst, `{"series":`...)
	dst = jsonstr.Append(dst, f.Series)
	dst = append(dst, `,"ts":"`...)
	dst = appendTime(dst, f.TS)
	dst = append(dst, `","model_version":`...)
	dst = strconv.AppendInt(dst, f.ModelVersion, 10)
	dst = append(dst, `,"alpha":`...)
	dst = appendFloat(dst, f.Alpha)
	dst = append(dst, `,"residual_share":`...)
	dst = appendFloat(dst, f.ResidualShare())
	if f.ResidualAllChannels {
		dst = append(dst, `,"residual_all_channels":true`...)
	}
	if full {
		dst = append(dst, `,"residual":`...)
		dst = appendSteps(dst, f.Fields, f.Residual, 64)
	}
	dst = append(dst, `,"frequencies":[`...)
	for k := range f.Frequencies {
		fr := &f.Frequencies[k]
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":`...)
		dst = strconv.AppendInt(dst, int64(fr.ID), 10)
		dst = append(dst, `,"period_steps":`...)
		dst = appendFloat(dst, fr.PeriodSteps)
		dst = append(dst, `,"period":"`...)
		dst = appendDuration(dst, fr.Period)
		dst = append(dst, `","share":`...)
		dst = appendFloat(dst, fr.Share)
		if fr.Cycle {
			dst = append(dst, `,"rhythm":`...)
			dst = strconv.AppendInt(dst, int64(fr.Rhythm), 10)
		}
		if full {
			dst = append(dst, `,"values":`...)
			dst = appendSteps(dst, f.Fields, fr.Values, 64)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	if len(f.Rhythms) > 0 {
		dst = append(dst, `,"rhythms":[`...)
		for k := range f.Rhythms {
			rp := &f.Rhythms[k]
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"index":`...)
			dst = strconv.AppendInt(dst, int64(rp.Index), 10)
			dst = append(dst, `,"period_steps":`...)
			dst = appendFloat(dst, rp.PeriodSteps)
			dst = append(dst, `,"period":"`...)
			dst = appendDuration(dst, rp.Period)
			dst = append(dst, `","share":`...)
			dst = appendFloat(dst, rp.Share)
			dst = append(dst, `,"frequencies":[`...)
			for j, id := range rp.Frequencies {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = strconv.AppendInt(dst, int64(id), 10)
			}
			dst = append(dst, ']')
			if full {
				dst = append(dst, `,"values":`...)
				dst = appendSteps(dst, f.Fields, rp.Values, 64)
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), nil
}

func checkEncodeMode(mode AttributionMode) error {
	if mode == AttributionsFull || mode == AttributionsSummary {
		return nil
	}
	if err := mode.check("attribution mode"); err != nil {
		return err
	}
	return errAttributionsOff
}

// appendSteps writes an H×C row-major block: an array of numbers for one
// field, an array of field objects for several; bits is 64, or 32 for
// numbers kept at float32 precision (interval bounds).
func appendSteps(dst []byte, fields []string, v []float64, bits int) []byte {
	c := len(fields)
	dst = append(dst, '[')
	for h := 0; h < len(v)/c; h++ {
		if h > 0 {
			dst = append(dst, ',')
		}
		if c == 1 {
			dst = appendFloatBits(dst, v[h], bits)
		} else {
			dst = appendFieldObject(dst, fields, v[h*c:(h+1)*c], bits)
		}
	}
	return append(dst, ']')
}

func appendFieldObject(dst []byte, fields []string, v []float64, bits int) []byte {
	dst = append(dst, '{')
	for i, name := range fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, name)
		dst = append(dst, ':')
		dst = appendFloatBits(dst, v[i], bits)
	}
	return append(dst, '}')
}

// appendFloat writes the shortest decimal that parses back to v, or null for
// NaN and ±Inf, which JSON cannot represent.
func appendFloat(dst []byte, v float64) []byte { return appendFloatBits(dst, v, 64) }

// appendFloatBits is appendFloat at float64 (bits 64) or float32 (bits 32)
// precision: the shortest decimal that parses back to float32(v), and null
// when float32(v) is not finite.
func appendFloatBits(dst []byte, v float64, bits int) []byte {
	if bits == 32 {
		v = float64(float32(v))
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(dst, "null"...)
	}
	return ftoa.AppendFloat(dst, v, bits)
}

// appendTime writes t in UTC as RFC 3339 with as many fractional digits as
// needed (none for whole seconds). Whole seconds of the years 0–9999, every
// horizon step at a cadence of whole seconds, are written digit by digit: a
// forecast writes one per step, and this takes 73 ns against the layout
// formatter's 97 (measured on a loaded 2-core machine).
func appendTime(dst []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	if t.Nanosecond() != 0 || y < 0 || y > 9999 {
		return t.AppendFormat(dst, time.RFC3339Nano)
	}
	h, mi, s := t.Clock()
	return appendClock(appendDate(dst, y, mo, d), h, mi, s)
}

// appendDate writes "YYYY-MM-DDT" for a year of 0–9999.
func appendDate(dst []byte, y int, mo time.Month, d int) []byte {
	dst = append(dst, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-')
	dst = append2(dst, int(mo), '-')
	return append2(dst, d, 'T')
}

// appendClock writes "hh:mm:ssZ".
func appendClock(dst []byte, h, mi, s int) []byte {
	dst = append2(dst, h, ':')
	dst = append2(dst, mi, ':')
	return append2(dst, s, 'Z')
}

// stepClock writes a forecast's step times (StepTime) as appendTime does,
// each from the one before when the cadence is whole seconds: a day's date
// is written once and each step adds the cadence to the second of the day,
// instead of working out the calendar date of every step (96 a forecast,
// most of the time of writing them).
type stepClock struct {
	cadence int64 // seconds, 0 when the steps are written one by one
	sec     int64 // second of the day of the step last written
	date    [11]byte
	dated   bool // date holds the day of sec
}

// start readies c for f's steps.
func (c *stepClock) start(f *Forecast) {
	*c = stepClock{}
	if f.Cadence > 0 && f.Cadence%time.Second == 0 && f.Cadence < 24*time.Hour {
		c.cadence = int64(f.Cadence / time.Second)
	}
}

// append writes the time of step h, which must follow step h−1.
func (c *stepClock) append(dst []byte, f *Forecast, h int) []byte {
	if c.cadence == 0 {
		return appendTime(dst, f.StepTime(h))
	}
	if c.dated {
		c.sec += c.cadence
	}
	if !c.dated || c.sec >= 86400 {
		// The first step, or a new day: the calendar's work, once.
		t := f.StepTime(h).UTC()
		y, mo, d := t.Date()
		if t.Nanosecond() != 0 || y < 0 || y > 9999 {
			c.cadence = 0 // written step by step from here on
			return appendTime(dst, t)
		}
		appendDate(c.date[:0], y, mo, d)
		hh, mi, ss := t.Clock()
		c.sec = int64(hh*3600 + mi*60 + ss)
		c.dated = true
	}
	sec := int(c.sec)
	return appendClock(append(dst, c.date[:]...), sec/3600, sec/60%60, sec%60)
}

// append2 writes v (0–99) as two digits, then sep.
func append2(dst []byte, v int, sep byte) []byte {
	return append(dst, byte('0'+v/10), byte('0'+v%10), sep)
}

func appendDuration(dst []byte, d time.Duration) []byte {
	return append(dst, d.String()...)
}
