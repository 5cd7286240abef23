package dataset

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Protocol names a standard way to split a benchmark file into training,
// validation and test rows. The protocols reproduce the borders of the
// Informer, Autoformer and DLinear data loaders (Dataset_ETT_hour,
// Dataset_ETT_minute and Dataset_Custom), so window counts and metrics
// compare with published tables.
type Protocol string

const (
	// ProtocolETTHour splits hourly ETT files at 12/4/4 months of 30 days,
	// with L the lookback:
	//
	//	train [0, 8640)   val [8640−L, 11520)   test [11520−L, 14400)
	//
	// Rows from 14400 on are not used. The file needs at least 14400 rows.
	ProtocolETTHour Protocol = "ett-hour"
	// ProtocolETTMinute splits 15-minute ETT files at the same borders ×4:
	//
	//	train [0, 34560)   val [34560−L, 46080)   test [46080−L, 57600)
	//
	// Rows from 57600 on are not used. The file needs at least 57600 rows.
	ProtocolETTMinute Protocol = "ett-minute"
	// ProtocolRatio splits any other file of n rows 70/10/20, computing the
	// sizes in float64 and truncating as the reference code's int(n*0.7)
	// does:
	//
	//	num_train = ⌊n·0.7⌋   num_test = ⌊n·0.2⌋   num_val = n − num_train − num_test
	//	train [0, num_train)   val [num_train−L, num_train+num_val)   test [n−num_test−L, n)
	ProtocolRatio Protocol = "ratio"
)

// ETT borders in hourly rows: 12, 16 and 20 months of 30 days.
const (
	ettTrainEnd = 12 * 30 * 24
	ettValEnd   = ettTrainEnd + 4*30*24
	ettTestEnd  = ettTrainEnd + 8*30*24
)

// ProtocolFor returns the protocol for a benchmark file: ProtocolETTHour when
// the base name of name starts with "ETTh", ProtocolETTMinute when it starts
// with "ETTm", and ProtocolRatio otherwise. The match is case-sensitive, as in
// the reference code.
func ProtocolFor(name string) Protocol {
	base := filepath.Base(name)
	switch {
	case strings.HasPrefix(base, "ETTh"):
		return ProtocolETTHour
	case strings.HasPrefix(base, "ETTm"):
		return ProtocolETTMinute
	default:
		return ProtocolRatio
	}
}

// Range is the half-open row range [Start, End).
type Range struct {
	// Start is the first row in the range.
	Start int
	// End is one past the last row in the range.
	End int
}

// Len returns the number of rows in the range, End − Start.
func (r Range) Len() int { return r.End - r.Start }

// String formats the range as "[Start, End)".
func (r Range) String() string { return fmt.Sprintf("[%d, %d)", r.Start, r.End) }

// Split holds the row ranges of the three parts of a benchmark file. Val and
// Test begin lookback rows before their border, so that the first window of
// each predicts the first row after the border; the parts therefore overlap
// by the lookback, exactly as in the reference code.
type Split struct {
	// Train holds the training rows; the Scaler is fitted on them alone.
	Train Range
	// Val holds the validation rows, lookback included.
	Val Range
	// Test holds the test rows, lookback included.
	Test Range
}

// Fits reports whether a file of the given number of rows holds a training,
// a validation and a test window of lookback + horizon rows under the
// protocol: whether Standard can cut it.
func (p Protocol) Fits(rows, lookback, horizon int) bool {
	if lookback < 1 || horizon < 1 {
		return false
	}
	s, err := p.Split(rows, lookback)
	return err == nil && min(s.Train.Len(), s.Val.Len(), s.Test.Len())-lookback >= horizon
}

// MinRows returns the length from which on every file Fits: the fewest rows
// to ask of a user. Under the ratio protocol a slightly shorter file may
// fit too, since the parts' rounding moves a row between them. It returns
// 0 when no file fits (an unknown protocol, a lookback or horizon below 1,
// or windows longer than an ETT file's parts).
func (p Protocol) MinRows(lookback, horizon int) int {
	switch p {
	case ProtocolETTHour, ProtocolETTMinute:
		scale := 1
		if p == ProtocolETTMinute {
			scale = 4
		}
		if !p.Fits(ettTestEnd*scale, lookback, horizon) {
			return 0
		}
		return ettTestEnd * scale
	case ProtocolRatio:
		if lookback < 1 || horizon < 1 {
			return 0
		}
		// The parts are 70%, 10% and 20% of the rows rounded down, each at
		// most a row short of its share: from sure on, every file fits.
		sure := max(10*(horizon+1), (10*(lookback+horizon+1)+6)/7, 5*(horizon+1))
		n := sure
		for n > 1 && p.Fits(n-1, lookback, horizon) {
			n--
		}
		return n
	}
	return 0
}

// Split returns the row ranges of a file of the given number of rows under
// the protocol, for a lookback of the given number of rows. It returns an
// error if the protocol is unknown, if lookback is negative, if the file is
// too short for the protocol (the ETT protocols need at least 14400 and
// 57600 rows), or if the lookback reaches before the first row.
//
// Split does not check that each part holds a whole window; NewWindows does.
func (p Protocol) Split(rows, lookback int) (Split, error) {
	if lookback < 0 {
		return Split{}, fmt.Errorf("split %s: lookback = %d is negative; use a positive --lookback", p, lookback)
	}
	switch p {
	case ProtocolETTHour, ProtocolETTMinute:
		scale, unit := 1, "hourly"
		if p == ProtocolETTMinute {
			scale, unit = 4, "15-minute"
		}
		trainEnd, valEnd, testEnd := ettTrainEnd*scale, ettValEnd*scale, ettTestEnd*scale
		if rows < testEnd {
			return Split{}, fmt.Errorf("split %s: file has %d rows, but the protocol needs at least %d "+
				"(20 months of 30 days of %s rows); use the complete ETT file, or the %s protocol for other data",
				p, rows, testEnd, unit, ProtocolRatio)
		}
		if lookback > trainEnd {
			return Split{}, fmt.Errorf("split %s: lookback = %d exceeds the %d training rows; use a --lookback of at most %d",
				p, lookback, trainEnd, trainEnd)
		}
		return Split{
			Train: Range{0, trainEnd},
			Val:   Range{trainEnd - lookback, valEnd},
			Test:  Range{valEnd - lookback, testEnd},
		}, nil
	case ProtocolRatio:
		if rows < 1 {
			return Split{}, fmt.Errorf("split %s: file has %d rows; need data to split", p, rows)
		}
		numTrain := int(float64(rows) * 0.7)
		numTest := int(float64(rows) * 0.2)
		numVal := rows - numTrain - numTest
		if lookback > numTrain {
			return Split{}, fmt.Errorf("split %s: lookback = %d exceeds the %d training rows (70%% of %d); "+
				"use a --lookback of at most %d or a longer file", p, lookback, numTrain, rows, numTrain)
		}
		return Split{
			Train: Range{0, numTrain},
			Val:   Range{numTrain - lookback, numTrain + numVal},
			Test:  Range{rows - numTest - lookback, rows},
		}, nil
	default:
		return Split{}, fmt.Errorf("split: unknown protocol %q; use %q, %q or %q",
			string(p), ProtocolETTHour, ProtocolETTMinute, ProtocolRatio)
	}
}
