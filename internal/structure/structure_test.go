package structure_test

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// maxLines is the longest a Go file may be without a reason in its
// package's doc.go.
const maxLines = 800

// repo is the module as the rules see it.
type repo struct {
	root   string   // the directory holding go.mod
	module string   // its module path
	files  []string // every .go file, slash-separated and relative to root
	// imports maps each package, by directory relative to root ("cmd/freqlens"),
	// to the import paths of its non-test files.
	imports map[string][]string
}

// loadRepo reads the module holding the working directory.
func loadRepo(t *testing.T) *repo {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
	r := &repo{root: dir, imports: map[string][]string{}}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(mod)) {
		if rest, ok := strings.CutPrefix(line, "module "); ok {
			r.module = strings.TrimSpace(rest)
		}
	}
	if r.module == "" {
		t.Fatal("go.mod names no module")
	}
	contexts := []build.Context{build.Default, build.Default}
	contexts[0].GOOS, contexts[0].GOARCH = "linux", "amd64"
	contexts[1].GOOS, contexts[1].GOARCH = "linux", "arm64"
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(must(filepath.Rel(dir, path)))
		name := d.Name()
		if d.IsDir() {
			if path != dir && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			for _, ctx := range contexts {
				p, err := ctx.ImportDir(path, 0)
				var noGo *build.NoGoError
				if errors.As(err, &noGo) {
					return nil
				}
				if err != nil {
					return fmt.Errorf("read package %s: %w", rel, err)
				}
				for _, imp := range p.Imports {
					if !slices.Contains(r.imports[rel], imp) {
						r.imports[rel] = append(r.imports[rel], imp)
					}
				}
				if r.imports[rel] == nil {
					r.imports[rel] = []string{} // a package importing nothing
				}
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "_") {
			r.files = append(r.files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// ours returns the directory of an import path of the module, and whether
// it is one.
func (r *repo) ours(importPath string) (string, bool) {
	if importPath == r.module {
		return "", true
	}
	rel, ok := strings.CutPrefix(importPath, r.module+"/")
	return rel, ok
}

// closure returns pkg and every package of ours it imports, directly or
// not, in a stable order.
func (r *repo) closure(pkg string) []string {
	seen := map[string]bool{pkg: true}
	out := []string{pkg}
	for i := 0; i < len(out); i++ {
		for _, imp := range r.imports[out[i]] {
			if rel, ok := r.ours(imp); ok && !seen[rel] {
				seen[rel] = true
				out = append(out, rel)
			}
		}
	}
	return out
}

// under reports whether path is prefix or inside it.
func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// TestImports checks the direction of imports: what cmd/freqlens, model,
// explain, measure, online, stream and readings may import.
func TestImports(t *testing.T) {
	r := loadRepo(t)
	const (
		kafkaGo    = "github.com/segmentio/kafka-go"
		franz      = "github.com/twmb/franz-go" // kfake and its client
		arrow      = "github.com/apache/arrow"
		prometheus = "github.com/prometheus"
	)
	for _, tc := range []struct {
		name string
		pkg  string
		// transitive: the rule holds for every package of ours pkg imports
		// too, directly or not.
		transitive bool
		// denied are import paths (with what is under them) no package the
		// rule covers may import; ours are of the module, relative.
		denied, deniedOurs []string
		// onlyOurs, when not nil, are the only packages of ours allowed.
		onlyOurs []string
		why      string
	}{
		{
			name: "cmd is flags and printing", pkg: "cmd/freqlens",
			deniedOurs: []string{"stream", "sink", "window", "online"},
			why:        "the command reaches the streaming stages through service and feed (issue 18)",
		},
		{
			name: "model is pure", pkg: "model", transitive: true,
			denied: []string{kafkaGo, franz, arrow, prometheus, "os", "io"}, onlyOurs: []string{"internal/gemm", "internal/scratch", "cycles"},
			why: "model is maths on slices: no Kafka, no Arrow, no files (package modelfile writes and reads them), nothing of ours but internal/gemm, internal/scratch and cycles",
		},
		{
			name: "modelfile is a format", pkg: "modelfile", transitive: true,
			denied: []string{kafkaGo, franz, arrow, prometheus}, onlyOurs: []string{"model", "internal/gemm", "internal/scratch", "cycles"},
			why: "modelfile turns a model into safetensors bytes and back: nothing of ours but the model",
		},
		{
			name: "measure is maths on the model", pkg: "measure", transitive: true,
			denied: []string{kafkaGo, franz, arrow, prometheus}, onlyOurs: []string{"model", "internal/gemm", "internal/scratch", "cycles"},
			why: "measure runs a model over a Source, as model's exported API offers it: nothing of ours but model (and what model imports), no stream, service, pipeline or training, so that training and online may both use it",
		},
		{
			name: "explain is the model applied", pkg: "explain", transitive: true,
			denied: []string{kafkaGo, franz, arrow, prometheus}, onlyOurs: []string{"model", "internal/gemm", "internal/scratch", "cycles"},
			why: "explain applies the model to windows in the data's units: nothing of ours but model (and what model imports), no Kafka, no Arrow, no metrics",
		},
		{
			name: "cycles stands alone", pkg: "cycles", transitive: true,
			denied: []string{kafkaGo, franz, arrow, prometheus}, onlyOurs: []string{},
			why: "cycles is discovery over plain slices, for the model and anyone else: nothing of ours",
		},
		{
			name: "online does not train", pkg: "online", transitive: true,
			deniedOurs: []string{"training", "history"},
			why:        "online fine-tunes with model.Stepper's steps; the training loop and the history it reads are package training's and history's (issue 45)",
		},
		{
			name: "calibration is a layout and its stores", pkg: "online/calibration", transitive: true,
			denied: []string{kafkaGo, franz, arrow, prometheus}, onlyOurs: []string{},
			why: "online/calibration keeps the intervals' calibration through an interface (StateStore): no Kafka client, no metrics, nothing of ours",
		},
		{
			name: "online knows no Kafka", pkg: "online", transitive: true,
			denied: []string{kafkaGo, franz, arrow},
			why:    "online keeps its state through calibration.StateStore, which package broadcast implements on Kafka",
		},
		{
			name: "stream knows no windows", pkg: "stream", transitive: true,
			deniedOurs: []string{"window", "model"},
			why:        "stream hands Arrow batches to pipeline, which feeds the windows and the model",
		},
		{
			name: "readings is a format", pkg: "readings", transitive: true,
			denied: []string{kafkaGo, franz, prometheus}, deniedOurs: []string{"model", "service", "pipeline", "online", "internal/kafkaconn"},
			why: "readings is the input format, for any producer: no Kafka client, no metrics, no kfake, nothing of the model or the service",
		},
		{
			name: "wire is a format", pkg: "wire", transitive: true,
			denied: []string{kafkaGo, franz, prometheus}, deniedOurs: []string{"model", "service", "pipeline", "online", "internal/kafkaconn"},
			why: "wire is the output format, for any consumer: no Kafka client, no metrics, no kfake, nothing of the model or the service",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := r.imports[tc.pkg]; !ok {
				t.Fatalf("package %s is not in the module", tc.pkg)
			}
			covered := []string{tc.pkg}
			if tc.transitive {
				covered = r.closure(tc.pkg)
			}
			for _, pkg := range covered {
				for _, imp := range r.imports[pkg] {
					via := ""
					if pkg != tc.pkg {
						via = fmt.Sprintf(" (through %s, which it imports)", pkg)
					}
					rel, isOurs := r.ours(imp)
					switch {
					case slices.ContainsFunc(tc.denied, func(d string) bool { return under(imp, d) }):
						t.Errorf("%s imports %s%s: %s", tc.pkg, imp, via, tc.why)
					case isOurs && slices.ContainsFunc(tc.deniedOurs, func(d string) bool { return under(rel, d) }):
						t.Errorf("%s imports %s%s: %s", tc.pkg, rel, via, tc.why)
					case isOurs && tc.onlyOurs != nil && !slices.Contains(tc.onlyOurs, rel):
						t.Errorf("%s imports %s%s: %s", tc.pkg, rel, via, tc.why)
					}
				}
			}
		})
	}
}

// kafkaBuilt lists what src builds of kafka-go by itself: calls of (or
// references to) kafka.NewReader, NewConsumerGroup and NewWriter, and
// kafka.Reader or kafka.Writer values (composite literals, new, variables
// and fields of the type itself, not of a pointer to it), one line each
// with its position. It parses src; filename names it in positions.
func kafkaBuilt(filename string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	name := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/segmentio/kafka-go" {
			name = "kafka"
			if imp.Name != nil {
				name = imp.Name.Name
			}
		}
	}
	if name == "" || name == "_" {
		return nil, nil
	}
	var found []string
	report := func(n ast.Node, what string) {
		found = append(found, fmt.Sprintf("%s: %s", fset.Position(n.Pos()), what))
	}
	if name == "." {
		report(f.Name, "dot-imports kafka-go, which hides what it builds")
		return found, nil
	}
	// isType reports whether e names kafka.Reader or kafka.Writer.
	isType := func(e ast.Expr) (string, bool) {
		if p, ok := e.(*ast.ParenExpr); ok {
			e = p.X
		}
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return "", false
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok || x.Name != name || (sel.Sel.Name != "Reader" && sel.Sel.Name != "Writer") {
			return "", false
		}
		return "kafka." + sel.Sel.Name, true
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == name {
				switch n.Sel.Name {
				case "NewReader", "NewConsumerGroup", "NewWriter":
					report(n, "kafka."+n.Sel.Name)
				}
			}
		case *ast.CompositeLit:
			if what, ok := isType(n.Type); ok {
				report(n, "a "+what+" literal")
			}
		case *ast.CallExpr:
			if fn, ok := n.Fun.(*ast.Ident); ok && fn.Name == "new" && len(n.Args) == 1 {
				if what, ok := isType(n.Args[0]); ok {
					report(n, "new("+what+")")
				}
			}
		case *ast.ValueSpec:
			if what, ok := isType(n.Type); ok {
				report(n, "a variable of type "+what)
			}
		case *ast.Field:
			if what, ok := isType(n.Type); ok {
				report(n, "a field or parameter of type "+what)
			}
		}
		return true
	})
	return found, nil
}

// TestKafkaClientsOnlyInKafkaconn: no non-test Go file outside
// internal/kafkaconn builds a kafka-go reader, consumer group or writer.
func TestKafkaClientsOnlyInKafkaconn(t *testing.T) {
	r := loadRepo(t)
	checked := 0
	for _, file := range r.files {
		if strings.HasSuffix(file, "_test.go") || under(filepath.ToSlash(filepath.Dir(file)), "internal/kafkaconn") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(r.root, file))
		if err != nil {
			t.Fatal(err)
		}
		found, err := kafkaBuilt(file, src)
		if err != nil {
			t.Fatalf("parse %s: %v", file, err)
		}
		checked++
		for _, f := range found {
			t.Errorf("%s: build it with internal/kafkaconn.Client (NewWriter, NewPartitionReader, NewGroupReader, NewConsumerGroup), "+
				"which sets the brokers, TLS, SASL, client id and logging", f)
		}
	}
	if checked < 50 {
		t.Errorf("checked %d files, fewer than the module has: is the walk broken?", checked)
	}
}

// TestKafkaBuiltFinds: the syntax-tree check of
// TestKafkaClientsOnlyInKafkaconn finds every way of building a kafka-go
// client, under any import name, and nothing else.
func TestKafkaBuiltFinds(t *testing.T) {
	for _, tc := range []struct {
		name, imp, src string // imp: the import block's lines (default: kafka-go)
		want           int
	}{
		{name: "NewWriter", src: `w := kafka.NewWriter(kafka.WriterConfig{})`, want: 1},
		{name: "NewReader", src: `r := kafka.NewReader(cfg)`, want: 1},
		{name: "NewConsumerGroup", src: `g, err := kafka.NewConsumerGroup(cfg)`, want: 1},
		{name: "function value", src: `f := kafka.NewReader; _ = f`, want: 1},
		{name: "writer literal", src: `w := &kafka.Writer{Addr: kafka.TCP("x")}`, want: 1},
		{name: "reader literal", src: `r := kafka.Reader{}`, want: 1},
		{name: "new", src: `w := new(kafka.Writer)`, want: 1},
		{name: "zero variable", src: `var w kafka.Writer`, want: 1},
		{name: "renamed import", imp: `kgo "github.com/segmentio/kafka-go"`, src: `w := &kgo.Writer{}; r := kgo.NewReader(c)`, want: 2},
		{name: "pointers are fine", src: `var w *kafka.Writer; var r []*kafka.Reader`, want: 0},
		{name: "the client's writer is fine", src: `w := kc.NewWriter(topic); w.BatchSize = 10`, want: 0},
		{name: "messages are fine", src: `m := kafka.Message{Key: k}`, want: 0},
		{name: "another package's Writer is fine", imp: `kafka "github.com/segmentio/kafka-go"` + "\n" + `k "example.com/other"`, src: `w := k.Writer{}; x := k.NewWriter()`, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			imp := tc.imp
			if imp == "" {
				imp = `"github.com/segmentio/kafka-go"`
			}
			src := fmt.Sprintf("package p\n\nimport (\n%s\n)\n\nfunc f() {\n%s\n}\n", imp, tc.src)
			found, err := kafkaBuilt("p.go", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if len(found) != tc.want {
				t.Errorf("found %q in\n%s\nwant %d", found, src, tc.want)
			}
		})
	}
}

// TestFileLength: no Go file is longer than maxLines lines unless it is
// generated or its directory's doc.go says why it is long.
func TestFileLength(t *testing.T) {
	r := loadRepo(t)
	for _, file := range r.files {
		path := filepath.Join(r.root, file)
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Count(src, []byte{'\n'})
		if len(src) > 0 && src[len(src)-1] != '\n' {
			lines++
		}
		if lines <= maxLines {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatalf("parse %s: %v", file, err)
		}
		if ast.IsGenerated(f) {
			continue
		}
		dir, base := filepath.Dir(file), filepath.Base(file)
		doc := filepath.ToSlash(filepath.Join(dir, "doc.go"))
		if reason, _ := os.ReadFile(filepath.Join(r.root, doc)); saysWhyLong(reason, base) {
			continue
		}
		t.Errorf("%s has %d lines, more than %d: split it where its parts are separate concerns, "+
			"or write in %s why it is long (%q)", file, lines, maxLines, doc, base+" is long because …")
	}
}

// saysWhyLong reports whether doc, the source of a doc.go, says in its
// comments "<base> is long because" (across line breaks).
func saysWhyLong(doc []byte, base string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", doc, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		return false
	}
	var text strings.Builder
	for _, c := range f.Comments {
		text.WriteString(c.Text())
		text.WriteByte(' ')
	}
	return strings.Contains(strings.Join(strings.Fields(text.String()), " "), base+" is long because")
}

// TestNoDefaultServeMux: no non-test Go file serves or registers on
// net/http's DefaultServeMux, where importing net/http/pprof (service, for
// metrics.pprof) puts Go's profiles without any of the metrics listener's
// TLS, authentication or Host check.
func TestNoDefaultServeMux(t *testing.T) {
	r := loadRepo(t)
	for _, file := range r.files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(r.root, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"http.DefaultServeMux", "http.Handle(", "http.HandleFunc(", "http.ListenAndServe(", "http.ListenAndServeTLS(", "Handler: nil"} {
			if strings.Contains(string(src), bad) {
				t.Errorf("%s uses %s: serve a mux of your own, behind the metrics listener's checks", file, bad)
			}
		}
	}
}
