package longtest

import (
	"slices"
	"testing"
)

func TestCases(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want []int
	}{{"", []int{1, 2}}, {"0", []int{1, 2}}, {"1", []int{1, 2, 3}}} {
		t.Setenv(Variable, tc.env)
		always := []int{1, 2}
		got := Cases(always, []int{3})
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s=%q: Cases = %v, want %v", Variable, tc.env, got, tc.want)
		}
		if len(always) != 2 || cap(always) != 2 {
			t.Errorf("Cases changed its first argument: %v", always)
		}
	}
}

func TestSkip(t *testing.T) {
	t.Setenv(Variable, "1")
	ran := false
	t.Run("on", func(t *testing.T) { Skip(t, "x"); ran = true })
	if !ran {
		t.Error("Skip skipped with the long cases on")
	}
	t.Setenv(Variable, "")
	ran = false
	t.Run("off", func(t *testing.T) { Skip(t, "x"); ran = true })
	if ran {
		t.Error("Skip did not skip with the long cases off")
	}
}
