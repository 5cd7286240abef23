// Package config reads the YAML file of `freqlens serve` into a
// service.Config: it starts from service.DefaultConfig() (every package's
// own defaults), sets the field of every key the file gives, then applies
// environment overrides. It holds no defaults and no value checks of its
// own: keys.go maps each key to its field, and service.New validates the
// result with the packages' Validate methods, whose errors name the key.
//
// Every key can be overridden from the environment with a variable named
// after its path (EnvName): kafka.brokers is FREQLENS_KAFKA_BROKERS
// (comma-separated), input.cadence is FREQLENS_INPUT_CADENCE,
// window.max_gap is FREQLENS_WINDOW_MAX_GAP, and so on. Unknown keys are
// errors, so a typo never silently falls back to a default; a key given
// without a value keeps its default.
//
// The key names are fixed: other tools write these files.
// config.example.yaml at the repository root is the commented reference,
// and a test keeps it loadable, valid and listing every key.
//
// config imports service (the Config it fills) and yaml; it is used by
// cmd/freqlens only.
package config
