// Package structure holds no code: its test checks the rules of the
// repository's shape that the compiler does not, so that a change breaking
// one fails `go test ./...` instead of waiting for a reviewer:
//
//   - cmd/freqlens is flags and printing: it imports none of stream, sink,
//     window and online (nor their subpackages); the service and the feed
//     package stand between it and them (tests of cmd may import them, to
//     decode what the service serves).
//   - Every kafka-go reader, consumer group and writer is built by
//     internal/kafkaconn: no non-test Go file outside it calls
//     kafka.NewReader, kafka.NewConsumerGroup or kafka.NewWriter or makes a
//     kafka.Reader or kafka.Writer value (a composite literal, new, or a
//     variable or field of the type), found by walking each file's syntax
//     tree, so that the brokers, TLS, SASL, client id and logging of the
//     deployment cannot be left out.
//   - No Go file, tests included, is longer than 800 lines, unless it is
//     generated ("Code generated … DO NOT EDIT.") or the package comment
//     of its directory's doc.go names it and says why ("FILE.go is long
//     because …").
//   - The direction of imports of ARCHITECTURE.md: model imports no Kafka,
//     Arrow or Prometheus package and nothing of ours but internal/gemm
//     and cycles; cycles imports nothing of ours; online imports neither
//     training nor history; stream imports neither window nor model;
//     readings and wire import no kafka-go, Prometheus or kfake and
//     nothing of the model or the service. These hold for the package and
//     every package of ours it imports, directly or not.
//
// Imports are read with go/build for linux on amd64 and on arm64 (the
// build tags the code uses), from the non-test files only; files and
// directories the go tool ignores (testdata, vendor, names starting with .
// or _) are skipped. A failure names the file or the import, the rule and
// what to do instead.
package structure
