package config

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/freqlens/freqlens/service"
)

// randomize gives the setting p a random value of its kind, one that a
// written string can keep (list items without commas or edge spaces).
func randomize(t *testing.T, r *rand.Rand, p any) {
	t.Helper()
	word := func() string { return "f" + strconv.Itoa(r.IntN(1000)) + string(rune('a'+r.IntN(26))) }
	switch p := p.(type) {
	case *[]string:
		*p = nil
		for range r.IntN(4) {
			*p = append(*p, word())
		}
		return
	case *[]float64:
		*p = nil
		for range r.IntN(4) {
			*p = append(*p, (r.Float64()-0.5)*math.Pow(10, float64(r.IntN(12)-4)))
		}
		return
	case *time.Duration:
		*p = time.Duration(r.Int64N(int64(400 * time.Hour)))
		return
	}
	rv := reflect.ValueOf(p).Elem()
	switch rv.Kind() {
	case reflect.String:
		rv.SetString(word())
	case reflect.Bool:
		rv.SetBool(r.IntN(2) == 1)
	case reflect.Int, reflect.Int64:
		rv.SetInt(r.Int64N(1<<40) - 1<<39)
	case reflect.Uint64:
		rv.SetUint(r.Uint64())
	case reflect.Float64:
		rv.SetFloat((r.Float64() - 0.5) * 1e6)
	default:
		t.Fatalf("no random value for a %s", rv.Type())
	}
}

// Every key's value, written by Values, is read back by FromValues as it
// was: a model file's recorded settings read its data as training did.
func TestValuesRoundTrip(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 7))
		cfg := service.DefaultConfig()
		ks := keys(&cfg)
		names := Keys()
		for _, k := range names {
			randomize(t, r, ks[k])
		}
		values, err := Values(cfg, names...)
		if err != nil {
			t.Fatal(err)
		}
		back, err := FromValues(values)
		if err != nil {
			t.Fatal(err)
		}
		bks := keys(&back)
		for _, k := range names {
			want, got := reflect.ValueOf(ks[k]).Elem().Interface(), reflect.ValueOf(bks[k]).Elem().Interface()
			if !reflect.DeepEqual(want, got) && !(emptyList(want) && emptyList(got)) {
				t.Errorf("seed %d: %s written as %q reads back as %v, want %v", seed, k, values[k], got, want)
			}
		}
	}
}

// emptyList says whether v is a nil or empty slice: a list written empty
// reads back nil.
func emptyList(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Slice && rv.Len() == 0
}

func TestValuesRefusals(t *testing.T) {
	cfg := service.DefaultConfig()
	if _, err := Values(cfg, "input.serie_field"); err == nil {
		t.Error("an unknown key was written")
	}
	cfg.Readings.ValueFields = []string{"speed,km/h"}
	var e *Error
	if _, err := Values(cfg, "input.value_fields"); !errors.As(err, &e) || e.Key != "input.value_fields" {
		t.Errorf("a list item holding a comma: %v, want an error naming input.value_fields", err)
	}
	if _, err := FromValues(map[string]string{"input.newer_key": "x"}); !errors.As(err, &e) || e.Key != "input.newer_key" {
		t.Errorf("a key this build lacks: %v, want an error naming it", err)
	}
	if _, err := FromValues(map[string]string{"input.cadence": "an hour"}); !errors.As(err, &e) || e.Key != "input.cadence" {
		t.Errorf("a bad duration: %v, want an error naming input.cadence", err)
	}
}
