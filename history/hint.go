package history

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/freqlens/freqlens/readings"
)

// hintRows is how many rows of a CSV guessLayout reads: enough to tell a
// series column, whose ids repeat, from a column of free text.
const hintRows = 500

// csvLayout is what a CSV's first rows say of its columns, when it looks like
// long-format data: the series column (and its first id), the time column
// and the numeric ones.
type csvLayout struct {
	series, example, time string
	values                []string
}

// LongHint says, for a CSV that failed to read as a wide file, how to
// read it as long-format data when it looks like that (a column of text,
// the series ids, beside a column of dates): the input settings to put in
// a --config file, with the file's own column names; "" otherwise.
func LongHint(path string, cfg readings.Config) string {
	l, ok := guessLayout(path)
	if !ok {
		return ""
	}
	yaml := "input: {series_field: " + yamlName(l.series) + ", time_field: " + yamlName(l.time)
	if len(l.values) > 0 {
		names := make([]string, len(l.values))
		for i, v := range l.values {
			names[i] = yamlName(v)
		}
		yaml += ", value_fields: [" + strings.Join(names, ", ") + "]"
	}
	yaml += "}"
	return fmt.Sprintf("it looks like long-format data (a reading a row): column %q holds series ids (%q) and %q the times; "+
		"read it with a --config file holding `%s`, or name the columns %s, %s and %s",
		l.series, l.example, l.time, yaml, cfg.SeriesField, cfg.TimeField, strings.Join(cfg.ValueFields, ", "))
}

// TextColumn returns the column of a CSV that looks like its series ids,
// and its first value: a column of text (neither numbers, dates nor
// missing-value marks such as NA) beside a column of dates, the one whose
// values repeat most when several are text (ids repeat; a note column
// varies). "" when there is none or the file cannot be read. A wide file
// (its first column a date, numbers after it) has none, whatever its dates'
// layout.
func TextColumn(path string) (name, value string) {
	l, ok := guessLayout(path)
	if !ok {
		return "", ""
	}
	return l.series, l.example
}

// guessLayout reads the header and up to hintRows rows of the CSV at path.
// The time column is the first whose first value is a date, the numeric
// columns those whose first value is a number or a missing-value mark, and
// the series column the text column with the fewest distinct values, but
// more than one when another has them.
func guessLayout(path string) (csvLayout, bool) {
	f, err := os.Open(path)
	if err != nil {
		return csvLayout{}, false
	}
	defer f.Close()
	cr := csv.NewReader(bufio.NewReader(f))
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return csvLayout{}, false
	}
	header = append([]string(nil), header...)
	first, err := cr.Read()
	if err != nil || len(first) != len(header) {
		return csvLayout{}, false
	}
	first = append([]string(nil), first...) // the reader reuses its record
	var l csvLayout
	var text []int
	for i, v := range first {
		switch v = strings.TrimSpace(v); {
		case isTime(v):
			if l.time == "" {
				l.time = header[i]
			}
		case v == "" || isNumber(v) || missingMark(v):
			l.values = append(l.values, header[i])
		default:
			text = append(text, i)
		}
	}
	if len(text) == 0 || l.time == "" {
		return csvLayout{}, false
	}
	distinct := make([]map[string]bool, len(text))
	for k, i := range text {
		distinct[k] = map[string]bool{strings.TrimSpace(first[i]): true}
	}
	for range hintRows - 1 {
		row, err := cr.Read()
		if err != nil {
			break
		}
		for k, i := range text {
			if i < len(row) {
				distinct[k][strings.TrimSpace(row[i])] = true
			}
		}
	}
	// The ids repeat, but one id is a file of one series, or a column of
	// units beside the ids ("mbar"): a column of several values wins.
	best := 0
	for k := range text {
		if d, b := len(distinct[k]), len(distinct[best]); b == 1 && d > 1 || d > 1 && d < b {
			best = k
		}
	}
	l.series, l.example = header[text[best]], strings.TrimSpace(first[text[best]])
	return l, true
}

// yamlName writes a column name for a YAML flow collection: as written
// when YAML reads it back as that text (letters, digits and _ . / -, not
// starting with a digit or a sign, and no word YAML reads as a value),
// quoted otherwise.
func yamlName(s string) string {
	plain := s != "" && !strings.ContainsAny(s[:1], "0123456789-./") &&
		strings.IndexFunc(s, func(r rune) bool {
			return !(r == '_' || r == '.' || r == '/' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) < 0
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null", "nan", "inf":
		plain = false
	}
	if plain {
		return s
	}
	return strconv.Quote(s)
}

// missingMark reports whether s is a common mark of a missing value.
func missingMark(s string) bool {
	switch strings.ToLower(s) {
	case "na", "n/a", "nan", "null", "none", "-", "?", "missing":
		return true
	}
	return false
}

// isNumber reports whether s parses as a float.
func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}
