package defaults

import (
	"slices"
	"testing"
	"time"
)

type inner struct{ Name string }

type config struct {
	N       int
	D       time.Duration
	S       string
	List    []string
	Flag    bool
	In      inner
	private int
}

func TestFill(t *testing.T) {
	def := config{N: 3, D: time.Second, S: "x", List: []string{"a"}, Flag: true, In: inner{"y"}, private: 9}
	got := config{N: 5, List: nil, In: inner{}}
	Fill(&got, def)
	want := config{N: 5, D: time.Second, S: "x", List: []string{"a"}, Flag: true, In: inner{"y"}}
	if got.N != want.N || got.D != want.D || got.S != want.S || !slices.Equal(got.List, want.List) || got.Flag != want.Flag ||
		got.In != want.In || got.private != 0 {
		t.Errorf("Fill = %+v, want %+v", got, want)
	}
	got.List[0] = "changed"
	if def.List[0] != "a" {
		t.Error("Fill shares the default's slice")
	}
}
