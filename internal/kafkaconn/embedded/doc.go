// Package embedded is an in-process Kafka-protocol broker (franz-go's
// kfake) for running FreqLens on one machine without Kafka: `freqlens demo`,
// `freqlens serve --embedded-broker` (through package service) and the
// tests of every package that talks to Kafka. It keeps everything in
// memory; a production deployment uses a real cluster through the same
// client code (package kafkaconn).
//
// # Where it sits
//
// Beside the connection layer it serves: it imports kfake, kafka-go and
// internal/kafkaconn (whose Client and admin requests create its topics),
// and no other FreqLens package. It is not part of package stream, which
// consumes and would then carry kfake into every build of the consumer;
// the broker is a piece of infrastructure the service starts, not part of
// reading the input.
//
// # Concurrency
//
// A Broker's methods are safe for concurrent use; Close is idempotent.
package embedded
