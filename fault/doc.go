// Package fault is the fault suite of the streaming service: its tests
// build the freqlens binary, run it as one or several replicas against an
// in-process Kafka-protocol broker (kfake) reached through a TCP proxy the
// tests can cut, and kill -9, SIGTERM, rebalance, cut the broker and feed
// bad input, each asserting that no window is lost and that duplicates are
// byte-identical. The package has no code of its own.
package fault
