package feed_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/freqlens/freqlens/dataset"
	"github.com/freqlens/freqlens/feed"
	"github.com/freqlens/freqlens/internal/kafkaconn"
	"github.com/freqlens/freqlens/internal/kafkaconn/embedded"
)

// startBroker starts the in-process broker with a topic "readings" and
// returns a client of it, and the function that closes both.
func startBroker() (*kafkaconn.Client, func()) {
	b, err := embedded.Start("127.0.0.1:0", map[string]int{"readings": 3})
	if err != nil {
		panic(err)
	}
	kcfg := kafkaconn.DefaultConfig()
	kcfg.Brokers = b.Addrs()
	kc, err := kafkaconn.New(kcfg)
	if err != nil {
		panic(err)
	}
	return kc, func() { kc.Close(); b.Close() }
}

// A CSV replayed to a topic of the in-process broker, as `freqlens replay`
// does: one reading per column and row, here as fast as the broker takes
// them.
func ExampleReplay() {
	kc, stop := startBroker()
	defer stop()
	data, err := dataset.ReadCSV(strings.NewReader("date,north,south\n"+
		"2026-01-05 08:00,412,380\n"+
		"2026-01-05 09:00,398.5,377\n"+
		"2026-01-05 10:00,371,362.25\n"), "counts.csv")
	if err != nil {
		panic(err)
	}
	r, err := feed.NewReplay(feed.DefaultReplayConfig(), kc, "readings", data)
	if err != nil {
		panic(err)
	}
	st, err := r.Run(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d readings from %d rows\n", st.Readings, st.Rows)
	// Output: 6 readings from 3 rows
}

// The demo's simulated sensors: a week of hourly traffic from three
// sensors, ending now, all sent at once.
func ExampleSimulation() {
	kc, stop := startBroker()
	defer stop()
	cfg := feed.DefaultSimulationConfig()
	cfg.Sensors, cfg.Steps, cfg.HistorySteps = 3, 7*24, 7*24
	s, err := feed.NewSimulation(cfg, kc, "readings", time.Now)
	if err != nil {
		panic(err)
	}
	if err := s.Run(context.Background()); err != nil {
		panic(err)
	}
	fmt.Println(s.Series())
	// Output: [s-0 s-1 s-2]
}
