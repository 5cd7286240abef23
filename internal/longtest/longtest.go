// Package longtest decides whether a test runs its long seeded cases.
//
// `go test ./...` must pass within minutes on a busy laptop, so each
// property test runs a few seeded cases by default (enough to fail when the
// property breaks) and the rest only when FREQLENS_LONG=1 asks for them, as
// CI's long suite does (docs/testing.md).
package longtest

import (
	"os"
	"testing"
)

// Variable is the environment variable that turns the long cases on.
const Variable = "FREQLENS_LONG"

// Enabled reports whether FREQLENS_LONG=1 asked for the long cases.
func Enabled() bool { return os.Getenv(Variable) == "1" }

// Cases returns always, followed by more when the long cases are on.
func Cases[T any](always, more []T) []T {
	if !Enabled() {
		return always
	}
	return append(append([]T(nil), always...), more...)
}

// Skip skips t unless the long cases are on, saying how to run it.
func Skip(t testing.TB, what string) {
	t.Helper()
	if !Enabled() {
		t.Skipf("%s: a long case; run with %s=1", what, Variable)
	}
}
