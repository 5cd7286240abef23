package config

import "github.com/freqlens/freqlens/service"

// keys maps every YAML key to the field of c it sets. This table is the
// whole of the file's format: the defaults are the packages' own
// (service.DefaultConfig), and so are the checks (service.Config.Validate).
func keys(c *service.Config) map[string]any {
	k, st, w, p, sk, o := &c.Kafka, &c.Stream, &c.Window, &c.Pipeline, &c.Sink, &c.Online
	return map[string]any{
		"kafka.brokers":        &k.Brokers,
		"kafka.group":          &st.Group,
		"kafka.client_id":      &k.ClientID,
		"kafka.dial_timeout":   &k.DialTimeout,
		"kafka.tls":            &k.TLS,
		"kafka.tls_ca_file":    &k.TLSCAFile,
		"kafka.sasl.mechanism": &k.SASL.Mechanism,
		"kafka.sasl.username":  &k.SASL.Username,
		"kafka.sasl.password":  &k.SASL.Password,

		"topics.input":        &st.Topic,
		"topics.forecasts":    &sk.ForecastTopic,
		"topics.attributions": &sk.AttributionTopic,
		"topics.dead_letter":  &st.DeadLetterTopic,
		"topics.drift":        &c.DriftTopic,
		"topics.models":       &c.ModelsTopic,

		"input.format":          &st.Format,
		"input.series_field":    &st.SeriesField,
		"input.time_field":      &st.TimeField,
		"input.value_fields":    &st.ValueFields,
		"input.csv_columns":     &st.CSVColumns,
		"input.cadence":         &p.Cadence,
		"input.max_future":      &st.MaxFuture,
		"input.batch_rows":      &st.BatchRows,
		"input.batch_latency":   &st.BatchLatency,
		"input.fetch_max_wait":  &st.MaxWait,
		"input.fetch_min_bytes": &st.MinBytes,
		"input.fetch_max_bytes": &st.MaxBytes,
		"input.start_offset":    &st.StartOffset,
		"input.drop_poison":     &st.DropPoison,

		"window.max_gap":          maxGap{&w.MaxGap},
		"window.fill":             &w.Fill,
		"window.allowed_lateness": &w.AllowedLateness,
		"window.series_ttl":       &w.SeriesTTL,
		"window.max_series":       &w.MaxSeries,
		"window.stride":           &w.Stride,

		"model.path": &c.ModelPath,

		"output.format":        &sk.Format,
		"output.attributions":  &sk.Attributions,
		"output.batch_timeout": &sk.BatchTimeout,
		"output.batch_size":    &sk.BatchSize,
		"output.batch_bytes":   &sk.BatchBytes,
		"output.write_timeout": &sk.WriteTimeout,
		"output.max_attempts":  &sk.MaxAttempts,
		"output.compression":   &sk.Compression,

		"metrics.listen": &c.MetricsListen,

		"service.workers":          &p.Workers,
		"service.max_batch":        &p.MaxBatch,
		"service.shutdown_timeout": &p.ShutdownTimeout,
		"service.expire_every":     &p.ExpireEvery,

		"online.enabled":            &o.Enabled,
		"online.interval":           &o.Interval,
		"online.min_new_samples":    &o.MinNewSamples,
		"online.replay_size":        &o.ReplaySize,
		"online.replay":             &o.Replay,
		"online.learning_rate":      &o.LearningRate,
		"online.steps":              &o.Steps,
		"online.train_heads":        &o.TrainHeads,
		"online.batch_size":         &o.BatchSize,
		"online.holdout":            &o.Holdout,
		"online.min_holdout":        &o.MinHoldout,
		"online.promote_margin":     &o.PromoteMargin,
		"online.workers":            &o.Workers,
		"online.duty":               &o.Duty,
		"online.checkpoint_dir":     &o.CheckpointDir,
		"online.keep_checkpoints":   &o.Keep,
		"online.drift_threshold":    &o.DriftThreshold,
		"online.min_duration":       &o.MinDuration,
		"online.dominant":           &o.Dominant,
		"online.dominant_min_share": &o.DominantMinShare,
		"online.spectrum_steps":     &o.SpectrumSteps,
		"online.track_series":       &o.TrackSeries,
		"online.error_half_life":    &o.ErrorHalfLife,
		"online.seed":               &o.Seed,
	}
}
