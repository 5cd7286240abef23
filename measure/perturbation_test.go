package measure

import (
	"context"
	"math"
	"testing"
)

// TestPerturbation: removing a window's k largest parts moves its forecast
// by exactly their sum, for a trained model on its test windows, and costs
// more accuracy than removing random parts.
func TestPerturbation(t *testing.T) {
	m, w := trainedTimedModel(t, 3)
	res, err := Perturbation(context.Background(), m, w, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Windows != w.Len()*w.Channels() || len(res.Steps) != 4 {
		t.Fatalf("perturbation over %d windows with %d steps, want %d and 4", res.Windows, len(res.Steps), w.Len()*w.Channels())
	}
	for _, st := range res.Steps {
		if st.Gap > 1e-9 || math.Abs(st.Change-st.Parts) > 1e-9*st.Parts {
			t.Errorf("k = %d: the forecast moved by %.6g on average, the removed parts sum to %.6g (largest gap %.3g)", st.K, st.Change, st.Parts, st.Gap)
		}
		if !(st.MSE >= res.MSE) {
			t.Errorf("k = %d: removing the largest parts left the MSE at %.4g, the full forecast's is %.4g", st.K, st.MSE, res.MSE)
		}
	}
	if top, random := res.Steps[0].MSE, res.Steps[0].RandomMSE; !(top > random) {
		t.Errorf("removing each window's largest part costs MSE %.4g, a random part %.4g: the attribution does not find what matters", top, random)
	}
}
