package jsonstr

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// replaced is s with every byte that is not valid UTF-8 replaced by U+FFFD,
// one for each byte, as encoding/json decodes what it encodes.
func replaced(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}

func check(t *testing.T, s string) {
	t.Helper()
	out := Append(nil, s)
	if !json.Valid(out) {
		t.Fatalf("Append(%q) = %q, not valid JSON", s, out)
	}
	var got string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("Append(%q) = %q: %v", s, out, err)
	}
	if want := replaced(s); got != want {
		t.Fatalf("Append(%q) decodes to %q, want %q", s, got, want)
	}
	std, _ := json.Marshal(s)
	var fromStd string
	json.Unmarshal(std, &fromStd)
	if got != fromStd {
		t.Fatalf("Append(%q) decodes to %q, encoding/json's to %q", s, got, fromStd)
	}
}

func TestAppend(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " and \ backslash`, "tab\tnew\nline\rcr", "\x00\x1f\x7f",
		"héllo wörld ✓ 日本", "\xff", "a\xc3", "\xed\xa0\x80", "ok\xf0\x9f\x98", "\u2028\u2029"} {
		check(t, s)
	}
}

// TestAppendRandomBytes: every output of random bytes, valid UTF-8 or not,
// is valid JSON that decodes to the input with each invalid byte replaced.
func TestAppendRandomBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			switch rng.IntN(4) {
			case 0:
				b[i] = byte(rng.IntN(0x20))
			case 1:
				b[i] = byte(0x80 + rng.IntN(0x80))
			default:
				b[i] = byte(rng.IntN(0x80))
			}
		}
		check(t, string(b))
	}
}

func FuzzAppend(f *testing.F) {
	f.Add("héllo\x00\xff\"\\")
	f.Fuzz(func(t *testing.T, s string) {
		check(t, s)
		if utf8.ValidString(s) && replaced(s) != s {
			t.Fatal("replaced changed a valid string")
		}
	})
}

func TestAppendAllocatesNothing(t *testing.T) {
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { buf = Append(buf[:0], "series\x00\xff✓") }); n != 0 {
		t.Errorf("Append allocates %v times, want 0", n)
	}
}
