package sinktest

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/freqlens/freqlens/wire"
)

// ReadLines decodes the output of the writer sink: forecast JSON lines, each
// followed by its attribution line unless attributions are off.
func ReadLines(data []byte) ([]wire.Forecast, error) {
	var out []wire.Forecast
	last := -1 // index in out of the forecast awaiting its attribution
	for n, line := range bytes.Split(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(line, &keys); err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		if _, ok := keys["frequencies"]; !ok {
			f, err := wire.DecodeForecastJSON(line)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n+1, err)
			}
			out = append(out, f)
			last = len(out) - 1
			continue
		}
		a, err := wire.DecodeAttributionJSON(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		if last < 0 {
			return nil, fmt.Errorf("line %d: an attribution without its forecast", n+1)
		}
		if out[last], err = wire.Merge(out[last], a); err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		last = -1
	}
	return out, nil
}
