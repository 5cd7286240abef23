// Package modelfile reads and writes FreqLens model files.
//
// A model file is safetensors: an 8-byte little-endian header length, a
// JSON header naming each tensor's dtype, shape and byte range, then the
// raw little-endian float64 tensors, so any safetensors reader (Python's
// safetensors, for one) opens it. FreqLens keeps the model's shapes,
// metadata (model.Meta: the training data's statistics and provenance,
// the placed peaks and rhythms, the test metrics and error quantiles) and
// a SHA-256 of the tensor bytes in the header's "__metadata__" map of
// strings.
//
// Decode checks everything it reads (sizes, shapes, byte ranges, the
// checksum, finite values, metadata that agrees with the shapes) and never
// panics on bad bytes; a truncated, corrupted or incompatible file gives
// an error that says what is wrong. A file of an older format holds a model
// that computes differently and is refused with the command that retrains
// it (FormatVersion). Save writes beside the target and renames, so a
// reader never sees half a model.
//
// The package sits beside model as image/png sits beside image: model is
// the network and knows nothing of files; this package turns one into
// bytes and back through model.Tensors, Model.Params and model.Assemble.
package modelfile
