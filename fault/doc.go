// Package fault is the fault suite of the streaming service: its tests
// build the freqlens binary, run it as one or several replicas against an
// in-process Kafka-protocol broker (kfake) reached through a TCP proxy the
// tests can cut, and kill -9, SIGTERM, rebalance, cut the broker and feed
// bad input, each asserting that no window is lost and that duplicates are
// byte-identical. The package has no code of its own.
//
// The suite crashes a replica only once it serves (/readyz): kfake starts
// a member's session timer only when its JoinGroup reply is delivered, so
// a member killed in mid-join is never expired and keeps its partitions
// for ever, where a real broker would expire it. The measurements
// (TestResumeTime and the capacity tests) run only when their environment
// variables ask for them.
package fault
