// Package cycles finds the cycles of a stretch of time series: the peaks of
// its periodogram, the rhythms they form (a fundamental period with the
// lines at its harmonics), and the calendar periods people name. It works
// on plain slices and imports nothing of FreqLens; the model places its
// frequencies on what it finds, and online learning tracks it.
//
// # Peaks
//
// FindPeaks takes T rows of C channels. Each channel is detrended (its
// least-squares line taken out), tapered with a Hann window and zero-padded
// to four times its length; the periodogram of T rows resolves frequencies
// 1/T apart. A local maximum is a peak when it stands MinProminence (30)
// times above the median power around it (for noise, whose periodogram is
// exponentially distributed about its local level, a chance of about
// e^(−30·ln 2) ≈ 1e-9 per bin) and carries MinShare (0.2%) of the channel's
// variance, amplitude²/2 over the variance. Its frequency is refined
// between the bins to where the tapered transform peaks, so a cycle is
// known to a small fraction of 1/T, far finer than the 1/L a window of L
// steps can tell apart. Below eight cycles in the rows a slow wander cannot
// be told from a cycle, so the search starts there; the calendar periods
// named in PeakOptions.Calendar are tested down to about four cycles, one
// test at one place rather than a search, and count when a tenth of the
// channels show them. Peaks that several channels show within the taper's
// main lobe (2/T) are one.
//
// # Rhythms
//
// FindRhythms groups lines (peaks with the id of the frequency placed on
// each) into rhythms. Lines are taken strongest first; an unclaimed line
// anchors a rhythm whose fundamental is its frequency divided by the n
// (1 … MaxHarmonic) that claims the most unclaimed lines at its harmonics,
// within Tolerance (0.6) natural bins. A fundamental below the anchor
// (n > 1) must be real: the lines it adds stand at least MinStrength (a
// quarter) of the anchor's amplitude, and either a strong line sits at the
// fundamental itself, two to four octaves below the anchor and within 0.2
// bins of where it puts it, or more of them line up than chance would (a
// Poisson tail under 1e-3). Taking lines strongest first keeps the
// day the day: the week's lines around it are weak, so the daily line does
// not reach down to the week, and they form the week afterwards. The
// fundamental is the least-squares fit to its lines' harmonics, set to a
// calendar period (a minute, an hour, a day, a week at the rows' cadence)
// when one lies within the resolution, and a rhythm never reaches past the
// calendar period its strongest line divides.
//
// # Placement
//
// A window cannot tell apart two lines closer than 1/L, so placement keeps
// the stronger; the rhythms' clock tells them apart by time, so
// CalendarSidebands and LeftHarmonics mark the lines worth a frequency
// anyway (the week's lines beside the day's; a day's 12 hours within 1/L
// of its 24 at a 10-minute cadence), and UnmarkUngrouped takes back those
// that joined no rhythm. HarmonicFills names a rhythm's missing harmonics
// for a fuller profile of its shape, and AddFills adds the frequencies
// placed on them to their rhythm.
package cycles
