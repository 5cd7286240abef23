package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/freqlens/freqlens/config"
	"github.com/freqlens/freqlens/internal/memlimit"
	"github.com/freqlens/freqlens/service"
)

// runServe is `freqlens serve`: the configuration file and the flags make a
// service.Config; package service assembles and runs it.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "YAML configuration (see config.example.yaml)")
	embedded := fs.String("embedded-broker", "", "start an in-process Kafka-protocol broker on this address (e.g. 127.0.0.1:9092) and create the topics")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus /metrics here (overrides metrics.listen)")
	logLevel := fs.String("log-level", "info", "the least level logged: debug, info, warn or error")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := require(fs, "config"); err != nil {
		return err
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if *metricsAddr != "" {
		cfg.MetricsListen = *metricsAddr
	}
	cfg.EmbeddedBroker = *embedded
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: use debug, info, warn or error", *logLevel)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	applyMemoryLimit(log)
	svc, err := service.New(ctx, cfg, service.WithLogger(log))
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// Stopped (SIGTERM, Ctrl-C) while starting, as a running service
		// stops: cleanly, not as a failure.
		log.Info("stopped before serving", "while", oneLine(err))
		return nil
	}
	if err != nil {
		return err
	}
	return svc.Run(ctx)
}

// applyMemoryLimit gives the Go heap a soft limit of 90% of the container's
// memory limit (package memlimit), unless GOMEMLIMIT is set, and logs it:
// without one the collector lets the heap reach twice its live size, and a
// replica over half its container's limit would be killed by the kernel.
func applyMemoryLimit(log *slog.Logger) {
	a, err := memlimit.Apply(memlimit.System(), os.LookupEnv)
	switch {
	case err != nil:
		log.Warn("could not read the container's memory limit; set GOMEMLIMIT to hold the heap below it", "err", err)
	case a.Limit > 0:
		log.Info("Go memory limit set from the container's", "gomemlimit_bytes", a.Limit, "container_bytes", a.Container, "from", a.Source)
	}
}

// loadConfig reads a serve configuration with the FREQLENS_* environment
// applied, and refuses a FREQLENS_<SECTION>_ variable that names no key (a
// misspelt override that would be ignored).
func loadConfig(path string) (service.Config, error) {
	cfg, err := config.Load(path, os.LookupEnv)
	if err != nil {
		return cfg, err
	}
	return cfg, config.CheckEnviron(os.Environ())
}
