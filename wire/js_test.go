package wire_test

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freqlens/freqlens/wire"
	"github.com/freqlens/freqlens/wire/wiretest"
)

// readArrowJS is run by node: it reads an Arrow IPC stream with the
// apache-arrow npm package and prints its schema and columns as JSON.
const readArrowJS = `
const fs = require('fs');
const { tableFromIPC } = require('apache-arrow');
const t = tableFromIPC(fs.readFileSync(process.argv[2]));
const out = { fields: t.schema.fields.map((f) => ({ name: f.name, type: String(f.type) })),
  metadata: Object.fromEntries(t.schema.metadata), rows: t.numRows, columns: {} };
for (const f of t.schema.fields) {
  const col = t.getChild(f.name);
  out.columns[f.name] = Array.from({ length: t.numRows }, (_, i) => {
    const v = col.get(i);
    if (typeof v === 'bigint') return Number(v);
    if (v && typeof v.toArray === 'function') return Array.from(v.toArray());
    return v;
  });
}
console.log(JSON.stringify(out));
`

// jsTable is what readArrowJS prints.
type jsTable struct {
	Fields []struct {
		Name, Type string
	}
	Metadata map[string]string
	Rows     int
	Columns  map[string][]json.RawMessage
}

// readWithJS writes b to a file and reads it with apache-arrow in node.
// The test is skipped unless FREQLENS_ARROW_JS names a node_modules
// directory holding apache-arrow (.ci/run installs it with npm and sets
// it).
func readWithJS(t *testing.T, b []byte) jsTable {
	t.Helper()
	modules := os.Getenv("FREQLENS_ARROW_JS")
	if modules == "" {
		t.Skip("FREQLENS_ARROW_JS is not set: set it to a node_modules directory with apache-arrow " +
			"(npm install --prefix DIR apache-arrow@17) to read the Arrow layouts with JavaScript")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("FREQLENS_ARROW_JS is set but node is not on PATH: %v", err)
	}
	dir := t.TempDir()
	data, script := filepath.Join(dir, "message.arrows"), filepath.Join(dir, "read.js")
	if err := os.WriteFile(data, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte(readArrowJS), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script, data)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("node could not read the message: %v\n%s", err, msg)
	}
	var tab jsTable
	if err := json.Unmarshal(out, &tab); err != nil {
		t.Fatalf("node printed %.300s: %v", out, err)
	}
	return tab
}

func jsNumbers(t *testing.T, raw []json.RawMessage) []float64 {
	t.Helper()
	out := make([]float64, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			t.Fatalf("%s is not a number: %v", r, err)
		}
	}
	return out
}

// TestArrowReadByJavaScript: the Arrow layouts read with the apache-arrow
// npm package, as a JavaScript consumer would: the forecast's columns (its
// fields, then the interval bounds as float32) and the attribution's rows
// hold the forecast's numbers.
func TestArrowReadByJavaScript(t *testing.T) {
	f := wiretest.ExampleMulti()
	wiretest.AddIntervals(&f, 0.8, 0.95)
	enc := wire.NewArrowEncoder(nil)
	defer enc.Release()
	fb, err := enc.AppendForecast(nil, &f)
	if err != nil {
		t.Fatal(err)
	}
	tab := readWithJS(t, fb)
	var names []string
	for _, fl := range tab.Fields {
		names = append(names, fl.Name+":"+fl.Type)
	}
	want := "series:Utf8 ts:Timestamp<NANOSECOND, UTC> origin_ts:Timestamp<NANOSECOND, UTC> model_version:Int64 step:Int32 " +
		"temp:Float64 humidity:Float64 temp_lower_0.8:Float32 humidity_lower_0.8:Float32 temp_upper_0.8:Float32 humidity_upper_0.8:Float32 " +
		"temp_lower_0.95:Float32 humidity_lower_0.95:Float32 temp_upper_0.95:Float32 humidity_upper_0.95:Float32"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("JavaScript reads the columns\n%s\nwant\n%s", got, want)
	}
	if tab.Rows != f.Horizon || tab.Metadata[wire.MetaIntervals] != "0.8,0.95" || tab.Metadata[wire.MetaMessage] != "forecast" {
		t.Errorf("rows %d, metadata %v; want %d rows, intervals 0.8,0.95", tab.Rows, tab.Metadata, f.Horizon)
	}
	C := len(f.Fields)
	for j, field := range f.Fields {
		check := func(col string, want []float64) {
			got := jsNumbers(t, tab.Columns[col])
			for h := range f.Horizon {
				if math.Float64bits(got[h]) != math.Float64bits(want[h*C+j]) {
					t.Errorf("%s at step %d: JavaScript reads %v, want %v", col, h+1, got[h], want[h*C+j])
				}
			}
		}
		check(field, f.Values)
		for _, iv := range f.Intervals {
			check(field+"_lower_"+formatLevel(iv.Level), iv.Lower)
			check(field+"_upper_"+formatLevel(iv.Level), iv.Upper)
		}
	}

	ab, err := enc.AppendAttribution(nil, &f, wire.AttributionsFull)
	if err != nil {
		t.Fatal(err)
	}
	at := readWithJS(t, ab)
	if at.Rows != 1+len(f.Frequencies) {
		t.Fatalf("JavaScript reads %d attribution rows, want %d", at.Rows, 1+len(f.Frequencies))
	}
	for j, field := range f.Fields {
		for r := range at.Rows {
			var got []float64
			if err := json.Unmarshal(at.Columns[field][r], &got); err != nil {
				t.Fatalf("%s row %d: %s: %v", field, r, at.Columns[field][r], err)
			}
			src := f.Residual
			if r > 0 {
				src = f.Frequencies[r-1].Values
			}
			for h := range f.Horizon {
				if got[h] != src[h*C+j] {
					t.Errorf("attribution %s row %d step %d: JavaScript reads %v, want %v", field, r, h+1, got[h], src[h*C+j])
				}
			}
		}
	}
}

func formatLevel(l float64) string {
	b, _ := json.Marshal(l)
	return string(b)
}
