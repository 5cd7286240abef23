package wire_test

import "github.com/freqlens/freqlens/wire/wiretest"

// Short names for the wiretest helpers the tests use most.
var (
	origin          = wiretest.Origin
	exampleSingle   = wiretest.Example
	exampleMulti    = wiretest.ExampleMulti
	randomForecasts = wiretest.Forecasts
	forecastPart    = wiretest.ForecastPart
	attributionPart = wiretest.AttributionPart
)
