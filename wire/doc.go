// Package wire is the format of the forecast and attribution topics: the
// Forecast type, its JSON and Arrow IPC encoders and decoders, the
// forecast-id and the message headers. The service writes with it; a Go
// consumer of the topics imports it (and nothing else of FreqLens) to read
// them:
//
//	f, err := wire.DecodeForecastJSON(msg.Value)        // forecast topic
//	a, err := wire.DecodeAttributionJSON(other.Value)   // attribution topic
//	full, err := wire.Merge(f, a)                       // matched by the forecast-id header
//
// # Where it sits
//
//	Kafka ──► stream ──► window ──► model ──► pipeline ──► sink ──► Kafka topics
//	                                              │           │
//	                                              └─ wire ────┘   (Forecast, encoders)
//
// wire imports Arrow and internal/arrowipc (the project's hardened Arrow
// IPC reader, shared with the input decoder of package readings) and
// internal/jsonstr (the JSON string encoder, shared with readings); it
// imports no Kafka client and no other FreqLens package.
//
// # Headers
//
// Every message on both topics is keyed by series and carries
//
//	forecast-id    32 hex digits: SHA-256(series ‖ 0x00 ‖ ts ‖ 0x00 ‖ model_version)[:16]
//	               (AppendForecastID), the same on both topics and for the same
//	               forecast issued again after a restart: drop duplicates by it
//	model-version  decimal
//	content-type   application/json or application/vnd.apache.arrow.stream
//
// # JSON layouts
//
// Forecast topic (AppendForecastJSON), one field:
//
//	{"series":"s-17","ts":"2026-01-05T08:00:00Z","model_version":3,"cadence":"1h0m0s",
//	 "horizon":[{"ts":"2026-01-05T09:00:00Z","value":412.5},{"ts":"2026-01-05T10:00:00Z","value":398.25}]}
//
// Several fields: each horizon entry has "values" instead of "value":
//
//	"horizon":[{"ts":"2026-01-05T09:00:00Z","values":{"temp":3.5,"humidity":80.25}},…]
//
// "ts" is the last observed step; horizon step h (0-based) is at
// ts + (h+1)·cadence.
//
// When the service has prediction intervals (output.intervals), the message
// ends with them, one entry per nominal level, each bound an array of the
// horizon's steps (field objects with several fields, like "values"):
//
//	"horizon":[…],
//	"intervals":[{"level":0.8,"lower":[398,380.5],"upper":[427,416]},
//	             {"level":0.95,"lower":[385.5,365],"upper":[440,431.5]}]
//
// The realised value of step h is expected within [lower[h], upper[h]] at
// the level's rate. Bounds are written at float32 precision (the shortest
// decimal that parses back to the float32; null beyond ±3.4e38), and the
// decoders read them so: a band needs no more, and with two levels a
// forecast carries 4·H bounds beside its H values, which as shortest
// float64 decimals would be most of the message's bytes and of its
// encoding time. The learner rounds the bounds it publishes to float32
// (package online), so the service holds what consumers decode.
// A forecast has intervals from its series' first forecast when the model
// file records the quantiles of its test-split errors; they are then
// calibrated on the series' realised values (see package online). With a
// model file that records no such quantiles they are absent until enough
// of the series' forecasts have been scored.
//
// Attribution topic (AppendAttributionJSON), full, one field:
//
//	{"series":"s-17","ts":"2026-01-05T08:00:00Z","model_version":3,"alpha":0.625,
//	 "residual_share":0,"residual":[400,390],
//	 "frequencies":[{"id":7,"period_steps":24,"period":"24h0m0s","share":0.75,"values":[8.5,6.25]},
//	                {"id":2,"period_steps":12,"period":"12h0m0s","share":0.25,"values":[4,2]}]}
//
// so that, step by step,
//
//	residual[h] + Σ_k frequencies[k].values[h] = horizon[h].value
//
// With several fields every per-step entry of "residual" and of each
// "values" is an object keyed by field, exactly like the forecast's
// "values":
//
//	"residual":[{"temp":3,"humidity":75},…]
//	"values":  [{"temp":0.5,"humidity":5},…]
//
//	residual[h][f] + Σ_k frequencies[k].values[h][f] = horizon[h].values[f]
//
// "share" is the frequency's part of the total absolute attribution, counted
// at the level of cycles: a model with rhythms also writes "rhythms", one
// per cycle of the data with its frequencies' ids, their summed values and
// its "share", what they add up to. The rhythms', the free frequencies' and
// the residual's ("residual_share") make 1, so where the residual's is
// missing it is 1 less the others (the Arrow layouts leave the residual
// row's share null, and a message may lack the key); a rhythm's
// frequencies' shares can sum to more than its own when its lines partly
// cancel. "period" is period_steps × cadence ("0s" when unknown). A model
// whose residual reads every field's leftover (the channel mix) writes
// "residual_all_channels":true after "residual_share"; the residual of
// field f then includes what the other fields say. The summary mode (attributions: summary) drops "residual" and every
// "values", keeping series, ts, model_version, alpha, residual_share and
// each frequency's id, period_steps, period and share: a few hundred bytes
// per forecast.
//
// Times are RFC 3339 in UTC with as many fractional digits as needed,
// durations are Go duration strings, numbers are the shortest decimal that
// parses back to the same float64, and NaN and ±Inf are written as null
// (read back as NaN). A single-field message does not name its field; the
// decoders call it "value".
//
// # Arrow layouts
//
// With format: arrow each message is one Arrow IPC stream (schema, one record
// batch, end-of-stream marker), uncompressed. Every message of a topic with
// the same fields and cadence has the same schema, so a consumer can
// concatenate the record batches of many messages into one table.
//
// Forecast topic: one row per horizon step.
//
//	column         type                     value
//	series         utf8                     the series (the message key)
//	ts             timestamp[ns, UTC]       the step's time: origin_ts + step·cadence
//	origin_ts      timestamp[ns, UTC]       the last observed step (JSON "ts")
//	model_version  int64
//	step           int32                    1 … H
//	<field>…       float64                  the forecast, one column per field, named as configured
//	<field>_lower_<level>…, <field>_upper_<level>…
//	               float32                  with intervals: per level, the lower bound of each field, then the upper
//	metadata       freqlens.message=forecast, freqlens.cadence=1h0m0s, freqlens.intervals=0.8,0.95 (with intervals)
//
// for example
//
//	series  ts                    origin_ts             model_version  step  temp  humidity
//	s-17    2026-01-05T09:00:00Z  2026-01-05T08:00:00Z  3              1     3.5   80.25
//	s-17    2026-01-05T10:00:00Z  2026-01-05T08:00:00Z  3              2     2.75  78
//
// Attribution topic: row 0 is the residual, then one row per frequency in
// the order of Forecast.Frequencies.
//
//	column         type                     value
//	series         utf8
//	origin_ts      timestamp[ns, UTC]       the last observed step
//	model_version  int64
//	alpha          float64
//	frequency_id   int64, nullable          null on the residual row
//	period_steps   float64, nullable        null on the residual row
//	period         duration[ns], nullable   null on the residual row
//	share          float64, nullable        null on the residual row
//	rhythm_share   float64, nullable        the share of the row's rhythm (the same on each of its rows);
//	                                        null on the residual's and a free frequency's row
//	<field>…       list<float64>            full mode only: the H per-step values of the row's part
//	metadata       freqlens.message=attribution, freqlens.cadence=1h0m0s, freqlens.attributions=full|summary,
//	               freqlens.rhythms=[{index, period_steps, period, frequencies}…] (a model with rhythms),
//	               freqlens.residual=all_channels (a residual that reads every field, as in JSON)
//
// for example
//
//	series  origin_ts             model_version  alpha  frequency_id  period_steps  period  share  rhythm_share  temp         humidity
//	s-17    2026-01-05T08:00:00Z  3              0.625  null          null          null    null   null          [3, 2.5]     [75, 78]
//	s-17    2026-01-05T08:00:00Z  3              0.625  7             24            24h     0.75   null          [0.5, -0.25] [5, 1.75]
//	s-17    2026-01-05T08:00:00Z  3              0.625  2             12            12h     0.25   null          [0, 0.5]     [0.25, -1.75]
//
// A stream of the layout without the rhythm_share column decodes too, with
// each rhythm's share the sum of its frequencies' (the only share that
// layout implies). A decoder that knows only that layout refuses a stream
// with the column: upgrade consumers before producers.
//
// so the element-wise sum of a field's lists over all rows is that field's
// forecast. The summary mode has the same rows without the list columns.
// Field names must not be one of the fixed column names (ValidateFields).
// Arrow keeps every float64 bit for bit, NaN and ±Inf included (interval
// bounds: every float32 bit).
//
// # Decoding
//
// DecodeForecastJSON, DecodeAttributionJSON, DecodeForecastArrow and
// DecodeAttributionArrow read the messages back into Forecasts, and Merge
// joins a forecast with its attribution. They never panic, every error is a
// *DecodeError, and decoding what the encoders wrote gives back the forecast
// bit for bit (JSON: for finite numbers, with a lone field named "value").
//
// # Concurrency
//
// The encoders are plain functions and allocate nothing once their
// destination buffer is large enough; ArrowEncoder keeps builders and is
// for one goroutine at a time. The decoders are safe for concurrent use.
package wire
