package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// The headers of every message on the forecast and attribution topics.
const (
	// HeaderForecastID is the forecast's deterministic id (AppendForecastID),
	// the same on both topics.
	HeaderForecastID = "forecast-id"
	// HeaderModelVersion is the model version, in decimal.
	HeaderModelVersion = "model-version"
	// HeaderContentType is application/json or
	// application/vnd.apache.arrow.stream.
	HeaderContentType = "content-type"
)

// AppendForecastID appends the forecast-id of a forecast to dst and returns
// the extended buffer: 32 lower-case hex digits, the first 16 bytes of
//
//	SHA-256(series ‖ 0x00 ‖ ts ‖ 0x00 ‖ model_version)
//
// where ts is the forecast's ts as the JSON layouts write it (RFC 3339 in
// UTC, time.RFC3339Nano: "2026-01-05T08:00:00Z") and model_version is in
// decimal. The same forecast issued again (after a restart, say) gets the
// same id, so consumers can drop duplicates by it. It allocates nothing when
// dst has room for the hashed bytes.
func AppendForecastID(dst []byte, series string, ts time.Time, modelVersion int64) []byte {
	n := len(dst)
	// Lay the hashed bytes out after dst, hash them, then write the digest
	// over them.
	dst = append(dst, series...)
	dst = append(dst, 0)
	dst = appendTime(dst, ts)
	dst = append(dst, 0)
	dst = strconv.AppendInt(dst, modelVersion, 10)
	sum := sha256.Sum256(dst[n:])
	return hex.AppendEncode(dst[:n], sum[:16])
}

// ForecastID returns the forecast-id of a forecast (see AppendForecastID).
func ForecastID(series string, ts time.Time, modelVersion int64) string {
	var buf [128]byte
	return string(AppendForecastID(buf[:0], series, ts, modelVersion))
}
