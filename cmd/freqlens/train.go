package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/freqlens/freqlens/explain"
	"github.com/freqlens/freqlens/history"
	"github.com/freqlens/freqlens/model"
	"github.com/freqlens/freqlens/modelfile"
	"github.com/freqlens/freqlens/training"
)

// trainReport is the JSON summary `train --json` prints as its last line.
type trainReport struct {
	Model              string             `json:"model"`
	Data               string             `json:"data"`
	Protocol           string             `json:"protocol"`
	Mode               string             `json:"mode"`
	Lookback           int                `json:"lookback"`
	Horizon            int                `json:"horizon"`
	Channels           int                `json:"channels"`
	Seed               uint64             `json:"seed"`
	ChannelShuffle     float64            `json:"channel_shuffle"`
	TopK               int                `json:"top_k"`
	ChannelMix         bool               `json:"channel_mix"`
	Dropout            float64            `json:"dropout"`
	WeightDecay        float64            `json:"weight_decay"`
	InputNoise         float64            `json:"input_noise"`
	LearningRate       float64            `json:"learning_rate"`
	Patience           int                `json:"patience"`
	FillHarmonics      int                `json:"fill_harmonics"`
	TimeZone           string             `json:"time_zone,omitempty"`
	Params             int                `json:"params"`
	TrainWindows       int                `json:"train_windows"`
	ValWindows         int                `json:"val_windows"`
	TestWindows        int                `json:"test_windows"`
	EpochsRun          int                `json:"epochs_run"`
	ResumedFrom        int                `json:"resumed_from,omitempty"` // epochs the checkpoint had finished
	EpochSecondsMedian float64            `json:"epoch_seconds_median"`
	TrainSeconds       float64            `json:"train_seconds"`
	Stopped            string             `json:"stopped"`
	BestEpoch          int                `json:"best_epoch"`
	ValMSE             float64            `json:"val_mse"`
	TestMSE            float64            `json:"test_mse"`
	TestMAE            float64            `json:"test_mae"`
	TestRMSE           float64            `json:"test_rmse"`
	NaiveMSE           float64            `json:"naive_mse"` // the better of the last reading and the window's mean, held
	PerChannelMSE      map[string]float64 `json:"per_channel_mse"`
	Alpha              float64            `json:"alpha"`
	ResidualShare      float64            `json:"residual_share"`
	OtherShare         float64            `json:"other_share"` // the frequencies of no cycle; with the cycles' and residual_share, 1
	Rhythms            []rhythmReport     `json:"rhythms"`
}

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	data := fs.String("data", "", "training data: a wide CSV (a date column, then one numeric column per channel), or long-format history (series, time and value fields) as CSV with a header, Arrow IPC or Parquet")
	cfgPath := fs.String("config", "", "serve configuration: its input.* field names, input.cadence, window.max_gap and window.fill apply to long-format data, and --from-topic reads its brokers and input topic")
	fromTopic := fs.Bool("from-topic", false, "train on the retained history of the input topic of --config instead of --data")
	since := fs.String("since", "", "with --from-topic: only messages of the last DURATION, e.g. 14d or 36h (default: all retained)")
	horizon := fs.Int("horizon", 0, "steps to forecast, e.g. 96")
	lookback := fs.Int("lookback", 96, "past steps in a window")
	epochs := fs.Int("epochs", 50, "most passes over the training windows (early stopping may end sooner)")
	batch := fs.Int("batch-size", 128, "windows per optimiser step")
	seed := fs.Uint64("seed", 42, "seed of the initialisation, shuffling and Gumbel noise")
	mode := fs.String("mode", "", "mixed (all channels in one model) or independent (one single-channel model for every channel and series); default mixed for a wide CSV, independent for long-format data")
	shuffle := fs.Float64("channel-shuffle", 1, "mixed mode: share of training samples whose channels come from independently drawn windows; 0 turns it off")
	out := fs.String("out", "", "where to write the model (safetensors)")
	topK := fs.Int("top-k", model.DefaultTopK, "frequencies each window selects (the paper's K): the cycles' first, all of them when they have more than K")
	dropout := fs.Float64("dropout", training.DefaultDropout, "probability of dropping a hidden unit of the residual MLP and the heads while training; 0 turns it off")
	rate := fs.Float64("learning-rate", training.DefaultLearningRate, fmt.Sprintf("Adam's base step size, annealed along a cosine to %g", training.DefaultMinLearningRate))
	decay := fs.Float64("weight-decay", 0, "AdamW's decoupled weight decay on the model's weight matrices (not biases, frequencies or the fusion weight); 0 turns it off")
	mix := fs.Bool("channel-mix", false, "mixed mode: let the residual MLP read every channel's leftover through a learned mix that follows the strongest cycle's phase, for channels that move together beyond their cycles (weather fields); validation decides per file")
	noise := fs.Float64("input-noise", 0, "standard deviation of Gaussian noise added to each normalised training window (not its target), a ridge-like penalty on the model's linear parts; 0 turns it off")
	patience := fs.Int("patience", training.DefaultPatience, "epochs without a better validation MSE that end training")
	zone := fs.String("time-zone", "", "IANA time zone (Europe/Berlin) whose wall clock the data's daily and weekly rhythms keep, so they stay on their hour across daylight-saving changes; default UTC")
	fill := fs.Int("fill-harmonics", 0, "put a frequency on every harmonic up to this one that a cycle found in the data lacks, so that its clock follows the cycle's shape more closely (more heads: slower training and forecasts); 0 leaves them out")
	freqInit := fs.String("frequency-init", string(training.InitSpectrum), "where the frequencies start: spectrum (one on each cycle of the training rows' periodogram) or grid (log-uniform, as the reference code)")
	maxWindows := fs.Int("max-windows", 100_000, "long-format data: train on at most this many windows, drawn at random (seeded) from every series, and validate on a fifth as many; 0 uses all")
	checkpoint := fs.String("checkpoint", "", "where to keep the run's state after every epoch, so that the same command run again after a crash, kill or Ctrl-C goes on from the last finished epoch (deleted once the model is written); default OUT.checkpoint, none to keep no state")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object, the only output on stdout (progress goes to stderr)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := require(fs, "horizon", "out"); err != nil {
		return err
	}
	sinceDur, err := checkTrainFlags(trainFlags{data: *data, fromTopic: *fromTopic, since: *since, horizon: *horizon, lookback: *lookback,
		epochs: *epochs, batch: *batch, mode: *mode, shuffle: *shuffle, out: *out, topK: *topK, dropout: *dropout, rate: *rate,
		decay: *decay, noise: *noise, mix: *mix,
		patience: *patience, zone: *zone, fill: *fill, freqInit: *freqInit, maxWindows: *maxWindows}, checkpoint)
	if err != nil {
		return err
	}
	if err := checkWritable(*out); err != nil {
		return err
	}

	split := history.Split{Lookback: *lookback, Horizon: *horizon, Mode: model.Mode(*mode), MaxWindows: *maxWindows, Seed: *seed}
	td, input, err := loadTrainingData(ctx, trainingSource{data: *data, configPath: *cfgPath, fromTopic: *fromTopic, since: sinceDur}, split, stderr)
	if err != nil {
		return err
	}
	if td.Summary != "" {
		fmt.Fprintln(stderr, td.Summary)
	}
	bar := newProgress(stderr, *epochs)
	opts := training.Options{
		Epochs: *epochs, BatchSize: *batch, Seed: *seed, FrequencyInit: training.FrequencyInit(*freqInit),
		TopK: *topK, ChannelMix: *mix, LearningRate: *rate, Patience: *patience, FillHarmonics: *fill,
		Checkpoint: *checkpoint, Start: bar.start, Epoch: bar.epoch, TimeZone: *zone,
	}
	opts.Dropout = *dropout
	opts.WeightDecay, opts.InputNoise = *decay, *noise
	if *dropout == 0 {
		opts.Dropout = -1 // off (0 is the model package's default)
	}
	switch {
	case *shuffle == 0:
		opts.ChannelShuffle = -1 // off
	case *shuffle > 0:
		opts.ChannelShuffle = *shuffle
	}
	res, err := training.Fit(ctx, td, *lookback, *horizon, opts)
	bar.done()
	if err != nil {
		return err
	}
	if res.Train.ResumedOn != "" {
		fmt.Fprintf(stderr, "freqlens train: note: %s\n", res.Train.ResumedOn)
	}
	m, tr := res.Model, res.Train
	m.Meta.Input = input
	if err := modelfile.Save(m, *out); err != nil {
		return err
	}
	if *checkpoint != "" && !res.Interrupted && !samePath(*checkpoint, *out) {
		// The model holds the finished run; a rerun trains anew.
		if err := os.Remove(*checkpoint); err != nil && !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stderr, "freqlens train: the model is written, but its checkpoint could not be deleted: %v\n", err)
		}
	}

	rep := newTrainReport(*out, td, res, *lookback, *horizon, *seed)
	if *asJSON {
		if err := json.NewEncoder(stdout).Encode(rep); err != nil {
			return err
		}
		return interrupted(res, tr, *out, *checkpoint, stderr)
	}
	printTrainReport(stdout, rep, m)
	fmt.Fprintf(stdout, "model written to %s\n", *out)
	return interrupted(res, tr, *out, *checkpoint, stderr)
}

// trainFlags are train's flags that checkTrainFlags judges.
type trainFlags struct {
	data, since, mode, out, zone, freqInit                 string
	fromTopic, mix                                         bool
	horizon, lookback, epochs, batch, topK, patience, fill int
	maxWindows                                             int
	shuffle, dropout, rate, decay, noise                   float64
}

// checkTrainFlags says what is wrong with train's flags, in a line naming
// the flag, and returns --since as a duration. It resolves *checkpoint:
// OUT.checkpoint by default, "" for none.
func checkTrainFlags(f trainFlags, checkpoint *string) (time.Duration, error) {
	switch *checkpoint {
	case "":
		*checkpoint = f.out + ".checkpoint"
	case "none":
		*checkpoint = ""
	}
	if *checkpoint != "" && samePath(*checkpoint, f.out) {
		return 0, fmt.Errorf("--checkpoint names the model file %s; give it a path of its own", f.out)
	}
	if f.mix && f.mode == string(model.Independent) {
		return 0, fmt.Errorf("--channel-mix mixes the channels of a mixed model, and --mode independent trains one single-channel model: drop one of them")
	}
	switch {
	case f.fromTopic && f.data != "":
		return 0, fmt.Errorf("--data and --from-topic name two sources; give one")
	case !f.fromTopic && f.data == "":
		return 0, fmt.Errorf("--data is required (a CSV, Arrow or Parquet file), or --from-topic with --config")
	case f.since != "" && !f.fromTopic:
		return 0, fmt.Errorf("--since applies to --from-topic only")
	}
	sinceDur, err := parseSince(f.since)
	if err != nil {
		return 0, err
	}
	if f.maxWindows < 0 {
		return 0, fmt.Errorf("--max-windows %d is negative; use 0 to train on every window", f.maxWindows)
	}
	if f.horizon < 1 || f.lookback < 4 || f.epochs < 1 || f.batch < 1 {
		return 0, fmt.Errorf("--horizon, --lookback, --epochs and --batch-size must be positive (lookback at least 4); got %d, %d, %d, %d", f.horizon, f.lookback, f.epochs, f.batch)
	}
	if f.zone != "" {
		if _, err := time.LoadLocation(f.zone); err != nil {
			return 0, fmt.Errorf("--time-zone %q is no time zone; use an IANA name such as Europe/Berlin or America/New_York", f.zone)
		}
	}
	switch {
	case f.topK < 1 || f.topK > model.DefaultFrequencies:
		return 0, fmt.Errorf("--top-k %d: use 1 to %d, the model's frequencies (default %d)", f.topK, model.DefaultFrequencies, model.DefaultTopK)
	case !(f.rate > training.DefaultMinLearningRate && f.rate <= 1):
		return 0, fmt.Errorf("--learning-rate %g: use a rate above the %g the schedule ends at and at most 1 (default %g)", f.rate, training.DefaultMinLearningRate, training.DefaultLearningRate)
	case f.patience < 1:
		return 0, fmt.Errorf("--patience %d: use at least 1 epoch (default %d)", f.patience, training.DefaultPatience)
	case f.fill < 0 || f.fill > model.DefaultFrequencies:
		return 0, fmt.Errorf("--fill-harmonics %d: use 0 (off) to %d (default 0)", f.fill, model.DefaultFrequencies)
	case !(f.dropout >= 0 && f.dropout < 1):
		return 0, fmt.Errorf("--dropout %g: use a probability from 0 (off) to below 1 (default %g)", f.dropout, training.DefaultDropout)
	case !(f.decay >= 0 && f.decay <= 10):
		return 0, fmt.Errorf("--weight-decay %g: use 0 (off) to 10 (validation prefers 0.5 on ETTh1: docs/benchmarks.md)", f.decay)
	case !(f.noise >= 0 && f.noise <= 10):
		return 0, fmt.Errorf("--input-noise %g: use a standard deviation from 0 (off) to 10, in units of the normalised window", f.noise)
	}
	if !(f.shuffle >= 0 && f.shuffle <= 1) {
		return 0, fmt.Errorf("--channel-shuffle %g is not a probability; use a value from 0 to 1", f.shuffle)
	}
	if m := model.Mode(f.mode); m != "" && m != model.Mixed && m != model.Independent {
		return 0, fmt.Errorf("--mode %q is unknown; use mixed or independent", f.mode)
	}
	if fi := training.FrequencyInit(f.freqInit); fi != training.InitSpectrum && fi != training.InitGrid {
		return 0, fmt.Errorf("--frequency-init %q is unknown; use %s or %s", f.freqInit, training.InitSpectrum, training.InitGrid)
	}

	return sinceDur, nil
}

// newTrainReport is the summary of a finished training run written to out.
func newTrainReport(out string, td *history.Data, res *training.FitResult, lookback, horizon int, seed uint64) trainReport {
	m, met, tr := res.Model, res.Test, res.Train
	return trainReport{
		Model: out, Data: td.Name, Protocol: td.Protocol, Mode: string(td.Mode),
		Lookback: lookback, Horizon: horizon, Channels: len(td.Columns), Seed: seed, Params: res.Params,
		ChannelShuffle: m.Meta.Training["channel_shuffle"], TopK: m.Config().TopK, ChannelMix: m.Config().ChannelMix,
		Dropout: m.Meta.Training["dropout"], WeightDecay: m.Meta.Training["weight_decay"], InputNoise: m.Meta.Training["input_noise"],
		LearningRate: m.Meta.Training["learning_rate"], Patience: int(m.Meta.Training["patience"]),
		FillHarmonics: int(m.Meta.Training["fill_harmonics"]), TimeZone: m.Meta.TimeZone,
		TrainWindows: td.Train.Len(), ValWindows: td.Val.Len(), TestWindows: td.Test.Len(),
		EpochsRun: tr.EpochsRun, ResumedFrom: tr.ResumedFrom, EpochSecondsMedian: tr.MedianEpochSeconds(), TrainSeconds: res.Seconds,
		Stopped: tr.Stopped, BestEpoch: tr.BestEpoch, ValMSE: tr.BestValMSE,
		TestMSE: met.MSE, TestMAE: met.MAE, TestRMSE: met.RMSE, NaiveMSE: res.Naive,
		PerChannelMSE: perChannel(td.Columns, met.PerChannelMSE), Alpha: m.Alpha(),
		ResidualShare: met.ResidualShare, Rhythms: rhythmsOf(m, met.Shares, met.RhythmShares),
		OtherShare: otherShare(m, met.Shares, met.RhythmShares, met.ResidualShare),
	}
}

// printTrainReport prints the summary of a training run for a reader.
func printTrainReport(stdout io.Writer, rep trainReport, m *model.Model) {
	fmt.Fprintf(stdout, "trained %d epochs (best %d; %s), median epoch %.2fs\n", rep.EpochsRun, rep.BestEpoch, stopReason(rep.Stopped), rep.EpochSecondsMedian)
	fmt.Fprintf(stdout, "validation MSE %.4f", rep.ValMSE)
	if strings.HasPrefix(rep.Protocol, "ett-") && rep.ValMSE > 1.5*rep.TestMSE {
		// Asked by a new user: the split's months differ, not the model.
		fmt.Fprint(stdout, " (the ETT protocol's validation months are harder to forecast than its test months; published tables compare the test MSE)")
	}
	fmt.Fprintln(stdout)
	channels := fmt.Sprintf("all %d channels", rep.Channels)
	if rep.Channels == 1 {
		channels = "1 channel"
	}
	fmt.Fprintf(stdout, "test MSE %.4f  MAE %.4f  (%s protocol, %d windows, %s)\n", rep.TestMSE, rep.TestMAE, rep.Protocol, rep.TestWindows, channels)
	if rep.TestMSE >= rep.NaiveMSE {
		fmt.Fprintf(stdout, "  no better than forecasting without a model (the last reading or the window's mean held: MSE %.4f): "+
			"the data may hold nothing to forecast at this horizon, or need more history; the cycles below explain forecasts that do not forecast\n", rep.NaiveMSE)
	}
	printRhythms(stdout, rep.Rhythms, rep.ResidualShare, "the test split")
	if !slices.ContainsFunc(rep.Rhythms, func(r rhythmReport) bool { return r.Share >= explain.MinCycleShare }) {
		fmt.Fprintln(stdout, "  (a cycle is found when the training part, the first 70% of the history, holds it about four times: "+
			"the day from about 6 days of readings, the week from about 6 weeks)")
	}
	printErrorQuantiles(stdout, m.Meta.ErrorQuantiles)
}

// interrupted says what an interrupted run left behind and returns
// context.Canceled, so that the command exits 130 as any interrupted
// command does: a script's `train && deploy` must not deploy the best epoch
// of a run cut short. It returns nil for a run that finished.
func interrupted(res *training.FitResult, tr *training.Result, out, checkpoint string, stderr io.Writer) error {
	if !res.Interrupted {
		return nil
	}
	fmt.Fprintf(stderr, "freqlens train: the best epoch so far (%d of %d run) is in %s\n", tr.BestEpoch, tr.EpochsRun, out)
	if checkpoint != "" {
		fmt.Fprintf(stderr, "freqlens train: run the same command again to go on from epoch %d (its state is in %s)\n", tr.EpochsRun, checkpoint)
	}
	return context.Canceled
}

// perChannel pairs channel names with values.
func perChannel(names []string, v []float64) map[string]float64 {
	out := make(map[string]float64, len(v))
	for i, x := range v {
		name := fmt.Sprintf("channel_%d", i)
		if i < len(names) {
			name = names[i]
		}
		out[name] = x
	}
	return out
}

// printErrorQuantiles prints where a served model's 80% and 95% intervals
// start: their bounds at the first and the last horizon step, averaged over
// the channels.
func printErrorQuantiles(w io.Writer, q *model.ErrorQuantiles) {
	if q == nil {
		return
	}
	bounds := func(level float64, h int) (lo, hi float64) {
		for c := range q.Channels {
			lo += q.Quantile((1-level)/2, h, c)
			hi += q.Quantile((1+level)/2, h, c)
		}
		return lo / float64(q.Channels), hi / float64(q.Channels)
	}
	var parts []string
	for _, level := range []float64{0.8, 0.95} {
		lo1, hi1 := bounds(level, 0)
		loH, hiH := bounds(level, q.Horizon-1)
		parts = append(parts, fmt.Sprintf("%.0f%% [%+.2f, %+.2f] at step 1, [%+.2f, %+.2f] at step %d", 100*level, lo1, hi1, loH, hiH, q.Horizon))
	}
	over := ""
	if q.Channels > 1 {
		over = fmt.Sprintf(", mean over the %d channels", q.Channels)
	}
	of := ""
	if q.Of > q.Windows {
		of = fmt.Sprintf(", spread evenly over all %d", q.Of)
	}
	fmt.Fprintf(w, "prediction intervals start from the errors of %d test windows%s (normalised units%s): %s\n", q.Windows, of, over, strings.Join(parts, "; "))
}

// parseSince reads --since: a Go duration (36h, 90m) or a number of days
// (14d).
func parseSince(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n float64
		if _, err := fmt.Sscanf(days, "%g", &n); err == nil && n > 0 {
			return time.Duration(n * 24 * float64(time.Hour)), nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	return 0, fmt.Errorf("--since %q is not a positive duration; use e.g. 14d or 36h", s)
}

// stopReason says in words why training stopped (training.Result.Stopped).
func stopReason(stopped string) string {
	switch stopped {
	case "epochs":
		return "ran every epoch"
	case "early_stopping":
		return "stopped early: validation stopped improving"
	case "canceled":
		return "interrupted"
	case "diverged":
		return "diverged"
	}
	return stopped
}

// checkWritable fails when no file can be created beside path, so that a
// mistyped --out stops the command before hours of training rather than
// after them.
func checkWritable(path string) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".freqlens-write-check-*")
	if err != nil {
		return fmt.Errorf("--out %s: cannot write in %s (%v); choose a directory that exists and that you can write to", path, dir, errors.Unwrap(err))
	}
	f.Close()
	return os.Remove(f.Name())
}

// samePath reports whether a and b name one file: the same absolute path,
// or (when both exist) the same file through links.
func samePath(a, b string) bool {
	aa, errA := filepath.Abs(a)
	ab, errB := filepath.Abs(b)
	if errA == nil && errB == nil && aa == ab {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}
