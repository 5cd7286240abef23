package model

// Metrics scores forecasts against targets on the scale of the data given
// (z-scored for the benchmark protocol).
type Metrics struct {
	// MSE, MAE and RMSE average over windows, horizon steps and channels.
	MSE, MAE, RMSE float64
	// PerChannelMSE and PerChannelMAE average over windows and steps.
	PerChannelMSE, PerChannelMAE []float64
	// Windows is the number of source windows scored, Channels their width.
	Windows, Channels int
	// Seconds is the wall time of the pass; WindowsPerSecond the source
	// windows forecast per second in it (batched, all workers).
	Seconds, WindowsPerSecond float64
	// Selected counts, per frequency id, the windows that selected it.
	Selected []int
	// Shares is, per frequency id, its mean share of the attribution
	// (level excluded, see Contribution.Share) over the windows, counting 0
	// where it has no part; ResidualShare is the residual MLP's, and
	// RhythmShares, per rhythm (in the order of Model.Meta.Rhythms), its
	// summed part's (Attribution.RhythmShares). The rhythms', the free
	// frequencies' and the residual's shares sum to 1. For an independent
	// model each channel of a window counts as a window.
	Shares        []float64
	ResidualShare float64
	RhythmShares  []float64
	// GroupMSE and GroupMAE average over each group's windows, steps and
	// channels, and GroupWindows counts them, when the evaluation names a
	// group per window (the series of long-format data; package measure's
	// Options.Groups); nil otherwise.
	GroupMSE, GroupMAE []float64
	GroupWindows       []int
}
