package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"os"

	"github.com/freqlens/freqlens/config"
	"github.com/freqlens/freqlens/service"
)

// runServe is `freqlens serve`: the configuration file and the flags make a
// service.Config; package service assembles and runs it.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "YAML configuration (see config.example.yaml)")
	embedded := fs.String("embedded-broker", "", "start an in-process Kafka-protocol broker on this address (e.g. 127.0.0.1:9092) and create the topics")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus /metrics here (overrides metrics.listen)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := require(fs, "config"); err != nil {
		return err
	}
	cfg, err := config.Load(*cfgPath, os.LookupEnv)
	if err != nil {
		return err
	}
	if *metricsAddr != "" {
		cfg.MetricsListen = *metricsAddr
	}
	cfg.EmbeddedBroker = *embedded
	svc, err := service.New(ctx, cfg, service.WithLogger(slog.New(slog.NewTextHandler(stderr, nil))))
	if err != nil {
		return err
	}
	return svc.Run(ctx)
}
