package structure_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goTest matches a go test command as the docs write it: flags, then the
// packages (./…), possibly broken over lines.
var goTest = regexp.MustCompile(`go test((?:\s+-[\w.]+(?:[ =](?:'[^']*'|[^\s'` + "`" + `-][^\s` + "`" + `]*))?)*)((?:\s+\./[\w/.]*)+)`)

// pattern matches a -run or -bench flag's value.
var pattern = regexp.MustCompile(`-(run|bench)[ =]('([^']*)'|(\S+))`)

// TestDocsCommandsExist: every go test command in the README and docs/
// names packages that exist and, for -run and -bench, a test or benchmark
// in one of them whose name contains each alternative of the pattern's
// first part (the flags before the packages, as the docs write them), so
// that a command a reader copies runs what the text says it
// measures (a test renamed or moved to another package fails here).
func TestDocsCommandsExist(t *testing.T) {
	r := loadRepo(t)
	docs, _ := filepath.Glob(filepath.Join(r.root, "docs", "*.md"))
	docs = append(docs, filepath.Join(r.root, "README.md"), filepath.Join(r.root, "ARCHITECTURE.md"))
	funcs := map[string]string{} // package dir → its test files' source
	seen := 0
	for _, doc := range docs {
		src, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(r.root, doc)
		text := strings.Join(strings.Fields(string(src)), " ")
		for _, m := range goTest.FindAllStringSubmatch(text, -1) {
			flags, pkgs := m[1], strings.Fields(m[2])
			var src strings.Builder
			for _, pkg := range pkgs {
				dir := strings.TrimSuffix(strings.TrimPrefix(pkg, "./"), "/")
				if strings.HasSuffix(dir, "...") {
					continue
				}
				if _, ok := funcs[dir]; !ok {
					files, _ := filepath.Glob(filepath.Join(r.root, dir, "*_test.go"))
					if st, err := os.Stat(filepath.Join(r.root, dir)); err != nil || !st.IsDir() {
						t.Errorf("%s: %q names package %s, which does not exist", rel, m[0], pkg)
						continue
					}
					var b strings.Builder
					for _, f := range files {
						s, _ := os.ReadFile(f)
						b.Write(s)
					}
					funcs[dir] = b.String()
				}
				src.WriteString(funcs[dir])
			}
			for _, p := range pattern.FindAllStringSubmatch(flags, -1) {
				v := p[3] + p[4]
				if v == "^$" || v == "." {
					continue
				}
				prefix := map[string]string{"run": "(Test|Fuzz|Example)", "bench": "Benchmark"}[p[1]]
				first := strings.SplitN(v, "/", 2)[0]
				for _, alt := range strings.Split(strings.Trim(first, "^$()"), "|") {
					alt = strings.Trim(alt, "^$()")
					alt = strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(alt, "Test"), "Benchmark"), "Fuzz")
					if alt == "" {
						continue
					}
					re, err := regexp.Compile(`func ` + prefix + `\w*` + alt)
					if err != nil {
						t.Errorf("%s: %q: pattern %q: %v", rel, m[0], alt, err)
						continue
					}
					seen++
					if !re.MatchString(src.String()) {
						t.Errorf("%s: %q: no %s in %v matches %q", rel, m[0], map[string]string{"run": "test", "bench": "benchmark"}[p[1]], pkgs, alt)
					}
				}
			}
		}
	}
	if seen < 50 {
		t.Fatalf("found %d test names in the docs' go test commands; the pattern no longer reads them", seen)
	}
}
