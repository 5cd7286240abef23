package dataset

import (
	"errors"
	"strings"
	"testing"
)

// TestReadCSVWithoutHeader: a file whose first row is a reading (a date and
// numbers) is refused, saying to add a header, instead of naming its
// columns after that reading's values and losing it; a header whose value
// columns have numeric names (years) is still a header.
func TestReadCSVWithoutHeader(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"no header", "2026-03-02 00:00:06,4.84,86.2\n2026-03-02 00:10:06,4.44,86.4\n2026-03-02 00:20:05,4.1,86.9\n",
			`is a reading, not a header; add a header row naming the date column and each value column, such as "date,column1,column2"`},
		{"epoch milliseconds, no header", "1772409606000,4.84\n1772410206000,4.44\n1772410805000,4.1\n", "is a reading, not a header"},
	} {
		_, err := ReadCSV(strings.NewReader(tc.text), tc.name+".csv")
		var ce *CSVError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) || ce.Line != 1 {
			t.Errorf("%s: err %v; want a CSVError at line 1 saying %q", tc.name, err, tc.want)
		}
	}
	f, err := ReadCSV(strings.NewReader("date,2024,2025\n2026-03-02 00:00,1,2\n2026-03-02 01:00,3,4\n2026-03-02 02:00,5,6\n"), "years.csv")
	if err != nil || strings.Join(f.Columns, ",") != "2024,2025" {
		t.Errorf("a header of years: %v, columns %v; want it read as a header", err, f)
	}
}
