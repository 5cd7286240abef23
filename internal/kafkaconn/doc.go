// Package kafkaconn is the one place where FreqLens connects to Kafka: the
// seed brokers, TLS, SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, all from
// kafka-go), the client id, the dial timeout and the adapter from kafka-go's
// printf logging to slog. Every kafka-go reader, writer, connection and
// admin request of the project is built from a Client: the consumer and its
// dead-letter writer (stream), the forecast producer (sink), the models
// topic and drift events (broadcast), the embedded broker's topic creation
// (embedded), the producers of package feed (`freqlens replay` and the
// demo's simulated sensors), and the test helpers of kafkatest.
//
// # Where it sits
//
// Below stream, sink and broadcast, which take a *Client instead of their
// own broker lists and credentials; the service builds one Client from the
// kafka.* keys of the configuration and hands it to all of them. It imports
// kafka-go only: no FreqLens package. Two packages sit beside it: embedded,
// the in-process broker (kfake) for single-machine runs and tests, and
// kafkatest, the tests' helpers.
//
// # What a Client offers
//
//   - NewWriter: a kafka-go Writer on the shared Transport (TLS, SASL,
//     client id), keyed messages hashed to partitions (kafka-go's Hash
//     balancer, FNV-1a), RequireAll. Every FreqLens writer is one, so they
//     all partition alike: a series' forecasts and dead letters land in
//     the partition number of its readings when those were written by
//     FreqLens and the topics have as many partitions. kafka-go
//     asks for the topic's partition count before every message; the
//     Writer's own layer over the Transport answers that from the last
//     answer for a second (partitionsCache).
//   - NewPartitionReader, NewGroupReader and NewConsumerGroup: kafka-go
//     Readers of one partition (at an offset) or in a consumer group, and
//     ConsumerGroup members with explicit generations (assignments,
//     per-partition committed offsets), on the shared Dialer. They are the
//     only places the project builds kafka-go readers and groups, so the
//     brokers, TLS, SASL, client id and logging cannot be left out.
//   - Admin: a kafka.Client for metadata, topic creation, ListOffsets
//     (including offsets for a time) and OffsetFetch.
//   - Partitions and ReadPartition: the offset range of every partition of
//     a topic, and the messages of one partition between two offsets
//     (robust to compacted gaps), for reading a topic back.
//   - Ping: a new connection to a seed broker, through TLS and SASL, that
//     asks for its API versions, for a connectivity check with a deadline;
//     its errors say what is likely misconfigured. It dials because the
//     shared Transport answers metadata requests from its cache, so a
//     request through it can succeed while the brokers are cut off. Connect
//     pings until a broker answers or kafka.connect_timeout has passed.
//
// # Concurrency
//
// A Client is safe for concurrent use. Its Dialer (every reader's) and
// Transport (every writer's and admin client's, with their connection
// pools) are shared by everything built from it; closing a sink closes its
// writers, and Close, which the service calls last, closes the Transport's
// idle connections once the readers and writers built from it are closed.
package kafkaconn
