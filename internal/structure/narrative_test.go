package structure_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// narrative matches prose that tells what changed and when instead of what
// is: a calendar date in parentheses or after until, before, since, as of
// or measured (on), and "this build" after until, before, since or as of.
var narrative = regexp.MustCompile(`(?i)(\b(until|before|since|as of|as before|measured( on)?)\s+20\d\d-\d\d-\d\d\b|\(20\d\d-\d\d-\d\d[,;)]|\b(until|before|since|as of) this build\b)`)

// TestDocsSayWhatIs: the Markdown docs (all but CHANGELOG.md, whose job is
// to say what changed and when) and the comments of non-test Go files are
// reference in the present tense; a dated diary in them fails.
func TestDocsSayWhatIs(t *testing.T) {
	r := loadRepo(t)
	err := filepath.WalkDir(r.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != r.root && (name == "testdata" || name == "vendor" || name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".md") || name == "CHANGELOG.md" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(r.root, path)
		for i, line := range strings.Split(string(src), "\n") {
			if m := narrative.FindString(line); m != "" {
				t.Errorf("%s:%d says what changed and when (%q): say what is, and put the change in CHANGELOG.md", rel, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range r.files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(r.root, file), nil, parser.ParseComments)
		if err != nil {
			t.Fatalf("parse %s: %v", file, err)
		}
		for _, g := range f.Comments {
			for _, c := range g.List {
				if m := narrative.FindString(c.Text); m != "" {
					t.Errorf("%s:%d: a comment says what changed and when (%q): say what is and why", file, fset.Position(c.Pos()).Line, m)
				}
			}
		}
	}
}

// TestNarrativeFinds: the pattern of TestDocsSayWhatIs finds the diary it
// is meant to and passes reference text with dates in it.
func TestNarrativeFinds(t *testing.T) {
	// The diary's date is put together here, so that this file holds none.
	day := "2026-" + "11-28"
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"Until " + day + " a cycle's share was the sum", true},
		{"measured " + day + " on two cores", true},
		{"Format 6 (" + day + ", late; seed 42)", true},
		{"as before " + day, true},
		{"10ms until " + "this build", true},
		{"freqlens backtest --from 2017-10-24", false},
		{`{"ts": "2026-01-05T08:00:00Z"}`, false},
		{"the test split starts on 2017-10-24", false},
	} {
		if got := narrative.MatchString(tc.text); got != tc.want {
			t.Errorf("%q: matched %v, want %v", tc.text, got, tc.want)
		}
	}
}
