package backtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/model"
)

func TestExploreShocks(t *testing.T) {
	if os.Getenv("FREQLENS_EXPLORE") == "" {
		t.Skip("exploration")
	}
	kinds := []dataset.ShockKind{dataset.ShockHoliday, dataset.ShockStorm, dataset.ShockOutage, dataset.ShockStuck, dataset.ShockSpikes, dataset.ShockLevel}
	if k := os.Getenv("FREQLENS_KIND"); k != "" {
		kinds = []dataset.ShockKind{dataset.ShockKind(k)}
	}
	cad := time.Hour
	if c := os.Getenv("FREQLENS_CADENCE"); c != "" {
		cad, _ = time.ParseDuration(c)
	}
	for _, kind := range kinds {
		start := time.Now()
		seed := uint64(3)
		if v := os.Getenv("FREQLENS_SEED"); v != "" {
			fmt.Sscan(v, &seed)
		}
		fd := newFeed(t, kind, cad, seed)
		cache := filepath.Join("/tmp/feeds", strings.ReplaceAll(fd.name, "/", "_")+".safetensors")
		m, err := model.Load(cache)
		if err != nil {
			m = trainFeed(t, fd, 24, 10)
			os.MkdirAll("/tmp/feeds", 0o755)
			m.Save(cache)
		}
		t.Logf("%s: trained in %v, test mse %.4f, rhythms %d", fd.name, time.Since(start), m.Meta.Metrics["test_mse"], len(m.Meta.Rhythms))
		fts := []bool{false}
		if os.Getenv("FREQLENS_FT") != "" {
			fts = []bool{true}
		}
		for _, ft := range fts {
			rep := backtestFeed(t, fd, m, ft, 6*time.Hour)
			var b strings.Builder
			rep.WriteText(&b)
			back, rc, _ := recovered(rep, fd)
			t.Logf("fine-tune %v shock %v..%v errors back %v, widths %.2f\n%s", ft, fd.shockFrom, fd.shockUntil, back, rc, b.String())
			for _, st := range rep.Timeline {
				if os.Getenv("FREQLENS_TIMELINE") == "" {
					break
				}
				if len(st.Width) == 2 {
					t.Logf("  %s n=%d mae %.3f w80 %.3f w95 %.3f cov %.2f/%.2f static w80 %.3f", st.Start.Format("01-02 15h"), st.Forecasts, st.MAE, st.Width[0], st.Width[1], st.Coverage[0], st.Coverage[1], st.StaticWidth[0])
				}
			}
		}
	}
}
