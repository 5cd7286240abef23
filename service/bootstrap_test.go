package service_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/modelfile"
	"github.com/freqlens/freqlens/service"
)

// TestBootstrapSettings: a missing model.path without model.bootstrap says
// how to get a model; bootstrap settings that cannot work name their key.
func TestBootstrapSettings(t *testing.T) {
	cfg := testConfig()
	cfg.ModelPath = filepath.Join(t.TempDir(), "none.safetensors")
	_, err := service.New(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "model.bootstrap.min_history") {
		t.Errorf("New without a model file: %v; want an error naming train --from-topic and model.bootstrap", err)
	}
	// Said at once, before a broker that does not answer is waited for.
	cfg.EmbeddedBroker, cfg.Kafka.Brokers, cfg.Kafka.ConnectTimeout = "", []string{"127.0.0.1:1"}, time.Minute
	start := time.Now()
	if _, err := service.New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("New without a model file or a broker: %v; want the missing model named", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("New took %v to say the model file is missing; it waited for the broker", took)
	}
	for _, tc := range []struct {
		name string
		b    service.BootstrapConfig
		key  string
	}{
		{"no horizon", service.BootstrapConfig{MinHistory: time.Hour, Lookback: 96, Epochs: 1, CheckEvery: time.Second}, "model.bootstrap.horizon"},
		{"short lookback", service.BootstrapConfig{MinHistory: time.Hour, Horizon: 24, Lookback: 2, Epochs: 1, CheckEvery: time.Second}, "model.bootstrap.lookback"},
		{"no epochs", service.BootstrapConfig{MinHistory: time.Hour, Horizon: 24, Lookback: 96, CheckEvery: time.Second}, "model.bootstrap.epochs"},
		{"negative history", service.BootstrapConfig{MinHistory: -time.Hour}, "model.bootstrap.min_history"},
	} {
		c := testConfig()
		c.ModelPath = "m.safetensors"
		c.Bootstrap = tc.b
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: %v; want an error naming %s", tc.name, err, tc.key)
		}
	}
}

// TestModelThatCannotServeIsSaidAtOnce: a model file that cannot serve the
// configured readings (a mixed model of another channel count, a model of
// another cadence) is refused before a broker that does not answer is
// waited for.
func TestModelThatCannotServeIsSaidAtOnce(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		mc      model.Config
		cadence time.Duration
		want    string
	}{
		{"a mixed model of three channels", model.Config{Lookback: 24, Horizon: 6, Channels: 3, Mode: model.Mixed, Hidden: 16, Frequencies: 8, TopK: 3}, time.Hour,
			"the readings have 1 value fields but this mixed model forecasts 3 channels"},
		{"a model of 15-minute steps", model.Config{Lookback: 24, Horizon: 6, Channels: 1, Mode: model.Independent, Hidden: 16, Frequencies: 8, TopK: 3}, 15 * time.Minute,
			"input.cadence is 1h0m0s but the model was trained on 15m0s steps"},
	} {
		m, err := model.New(tc.mc, 1)
		if err != nil {
			t.Fatal(err)
		}
		m.Meta.Cadence = tc.cadence
		cfg := testConfig()
		cfg.ModelPath = filepath.Join(dir, tc.name+".safetensors")
		if err := modelfile.Save(m, cfg.ModelPath); err != nil {
			t.Fatal(err)
		}
		cfg.EmbeddedBroker, cfg.Kafka.Brokers, cfg.Kafka.ConnectTimeout = "", []string{"127.0.0.1:1"}, time.Minute
		start := time.Now()
		if _, err := service.New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "model.path") {
			t.Errorf("%s: New = %v; want an error naming model.path and %q", tc.name, err, tc.want)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%s: New took %v to refuse the model; it waited for the broker", tc.name, took)
		}
	}
}

// TestFineTuningWithoutAPlaceToKeepVersionsIsWarned: fine-tuning with
// neither online.checkpoint_dir nor topics.models loses its versions at a
// restart, and the start says so; with either, nothing is said.
func TestFineTuningWithoutAPlaceToKeepVersionsIsWarned(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*service.Config)
		warn bool
	}{
		{"neither", func(*service.Config) {}, true},
		{"a checkpoint directory", func(c *service.Config) { c.Online.CheckpointDir = t.TempDir() }, false},
		{"a models topic", func(c *service.Config) { c.ModelsTopic = "freqlens.models" }, false},
	} {
		cfg := testConfig()
		cfg.Online.Enabled = true
		tc.set(&cfg)
		var logs bytes.Buffer
		svc, err := service.New(context.Background(), cfg, service.WithModel(testModel(t)), service.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		svc.Close()
		if got := strings.Contains(logs.String(), "fine-tuned versions are kept in memory only"); got != tc.warn {
			t.Errorf("%s: warned %v, want %v; log:\n%s", tc.name, got, tc.warn, logs.String())
		}
	}
}
