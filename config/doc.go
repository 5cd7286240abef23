// Package config loads the YAML file of `freqlens serve`: it reads the file,
// applies environment overrides, fills in defaults and validates everything
// with messages that name the key and say what to write instead.
//
// Every key can be overridden from the environment with a variable named
// after its path: kafka.brokers is FREQLENS_KAFKA_BROKERS (comma-separated),
// input.cadence is FREQLENS_INPUT_CADENCE, window.max_gap is
// FREQLENS_WINDOW_MAX_GAP, and so on. Unknown keys are errors, so a typo
// never silently falls back to a default.
//
// The key names are fixed: other tools write these files. config.example.yaml
// at the repository root is the commented reference, and a test keeps it
// loadable.
//
// The package only reads and checks; the pipeline turns a File into each
// package's own Config.
package config
