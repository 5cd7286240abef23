// Package sinktest is the shared test suite of sink.Sink implementations,
// with readers that turn a sink's output (JSON lines, Kafka topics) back
// into forecasts.
//
// Every Sink passes Run:
//
//	func TestSuite(t *testing.T) {
//		sinktest.Run(t, func(t *testing.T) (sink.Sink, sinktest.Delivered) {
//			m := sink.NewMemory()
//			return m, func(testing.TB) []wire.Forecast { return m.Forecasts() }
//		})
//	}
//
// The suite writes full attributions and names the one field of
// single-field forecasts "value", because the JSON layouts do not carry that
// name. Its values are finite (JSON writes NaN and ±Inf as null).
//
// sinktest sits beside sink, for tests only: it imports sink, wire,
// wire/wiretest (the forecast generator and comparison), kafka-go and
// internal/kafkaconn/kafkatest, and is imported by the tests of sink. Run
// starts goroutines only to call Write concurrently and waits for them;
// ReadKafka opens and closes its own readers.
package sinktest
