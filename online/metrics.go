package online

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/freqlens/freqlens/internal/registry"
)

// horizonBuckets cut the horizon into quarters for the error gauges.
func horizonBuckets(H int) (names []string, bounds [][2]int) {
	names, bounds = append(names, "all"), append(bounds, [2]int{0, H})
	for q := range 4 {
		lo, hi := q*H/4, (q+1)*H/4
		if hi > lo {
			names = append(names, strconv.Itoa(lo+1)+"-"+strconv.Itoa(hi))
			bounds = append(bounds, [2]int{lo, hi})
		}
	}
	return names, bounds
}

type metrics struct {
	period, periodSec, ratio, share, dominant *prometheus.GaugeVec
	rhythmPeriod, rhythmRatio, rhythmShare    *prometheus.GaugeVec
	rhythmDominant, frequencyRhythm           *prometheus.GaugeVec
	alpha, lastPromotion, testMSE             prometheus.Gauge
	driftThreshold                            prometheus.Gauge
	mse, mae                                  *prometheus.GaugeVec
	absErr                                    prometheus.Histogram
	errors, sqErr, absErrSum                  prometheus.Counter
	rounds                                    *prometheus.CounterVec
	holdoutMSE                                *prometheus.GaugeVec
	events                                    *prometheus.CounterVec
	pairs                                     prometheus.Counter
	replay, tracked                           prometheus.Gauge
	refused                                   prometheus.Counter
	publishErrors                             prometheus.Counter
	coverage, nominal                         *prometheus.GaugeVec
	intervalScore, intervalWidth              *prometheus.GaugeVec
	intervalCorrection                        *prometheus.GaugeVec
	intervalsScored, intervalsCovered         *prometheus.CounterVec
	intervalScoreSum                          *prometheus.CounterVec
	stateRecords, stateBytes, stateSkipped    prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	freq, cycle := []string{"frequency"}, []string{"rhythm", "cycle"}
	m := &metrics{
		period: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "freqlens_frequency_period_steps",
			Help: "Learned period of each frequency of the serving model, in steps."}, freq),
		periodSec: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "freqlens_frequency_period_seconds",
			Help: "Learned period of each frequency of the serving model, in seconds (when the cadence is known)."}, freq),
		ratio: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "freqlens_period_drift_ratio",
			Help: "Period / reference period − 1 of each frequency (signed relative change)."}, freq),
		share: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "freqlens_frequency_share",
			Help: "Recent part of the absolute attribution carried by each frequency."}, freq),
		dominant: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "freqlens_frequency_dominant",
			Help: "1 when the frequency is among the dominant ones (by recent attribution share), else 0."}, freq),
		rhythmPeriod: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "freqlens_rhythm_period_seconds",
			Help: "Fundamental period of each rhythm (a cycle of the data with its harmonics) of the serving model, in seconds (when the cadence is known); label cycle names its reference period."}, cycle),
		rhythmRatio: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "freqlens_rhythm_drift_ratio",
			Help: "Period / reference period − 1 of each rhythm (signed relative change); a rhythm's frequencies drift as one."}, cycle),
		rhythmShare: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "freqlens_rhythm_share",
			Help: "Recent part of the absolute attribution carried by each rhythm: what its frequencies add up to, against the other frequencies' and the residual's parts."}, cycle),
		rhythmDominant: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "freqlens_rhythm_dominant",
			Help: "1 when the rhythm is among the dominant ones (by recent attribution share), else 0."}, cycle),
		frequencyRhythm: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "freqlens_frequency_rhythm",
			Help: "Index of the rhythm each frequency is a harmonic of (the rhythm label of the freqlens_rhythm_* metrics), −1 for a free frequency."}, freq),
		alpha: prometheus.NewGauge(prometheus.GaugeOpts{Name: "freqlens_fusion_alpha",
			Help: "Fusion weight α of the serving model: the frequency part's weight against the residual."}),
		lastPromotion: prometheus.NewGauge(prometheus.GaugeOpts{Name: "freqlens_finetune_last_promotion_timestamp_seconds",
			Help: "Unix time of the last promoted fine-tuned model (0: none yet)."}),
		testMSE: prometheus.NewGauge(prometheus.GaugeOpts{Name: "freqlens_model_test_mse",
			Help: "Test MSE of the trained model as recorded in its file (normalised units), for comparison with freqlens_forecast_mse."}),
		mse: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "freqlens_forecast_mse",
			Help: "Rolling online MSE of issued forecasts against realised values, normalised units, by horizon bucket."}, []string{"horizon_bucket"}),
		mae: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "freqlens_forecast_mae",
			Help: "Rolling online MAE of issued forecasts against realised values, normalised units, by horizon bucket."}, []string{"horizon_bucket"}),
		absErr: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "freqlens_forecast_abs_error",
			Help:    "Absolute error of each forecast step against its realised value, normalised units.",
			Buckets: []float64{0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5}}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "freqlens_forecast_errors_total",
			Help: "Forecast steps scored against realised values."}),
		sqErr: prometheus.NewCounter(prometheus.CounterOpts{Name: "freqlens_forecast_squared_error_total",
			Help: "Sum of squared normalised errors; divide its increase by freqlens_forecast_errors_total's for the MSE over any range."}),
		absErrSum: prometheus.NewCounter(prometheus.CounterOpts{Name: "freqlens_forecast_absolute_error_total",
			Help: "Sum of absolute normalised errors."}),
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "freqlens_finetune_rounds_total",
			Help: "Fine-tuning rounds by outcome."}, []string{"outcome"}),
		holdoutMSE: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "freqlens_finetune_holdout_mse",
			Help: "Holdout MSE of the serving model and of the candidate in the last scored round."}, []string{"model"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "freqlens_drift_events_total",
			Help: "Drift events raised, by kind."}, []string{"kind"}),
		pairs: prometheus.NewCounter(prometheus.CounterOpts{Name: "freqlens_online_pairs_total",
			Help: "Completed (window, realised target) pairs added to the replay buffer."}),
		replay: prometheus.NewGauge(prometheus.GaugeOpts{Name: "freqlens_online_replay_pairs",
			Help: "Pairs held in the replay buffer."}),
		tracked: prometheus.NewGauge(prometheus.GaugeOpts{Name: "freqlens_online_tracked_series",
			Help: "Series whose forecasts are remembered and scored."}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "freqlens_online_untracked_forecasts_total",
			Help: "Forecasts not scored because their series is beyond online.track_series."}),
		driftThreshold: prometheus.NewGauge(prometheus.GaugeOpts{Name: "freqlens_drift_threshold_ratio",
			Help: "The configured online.drift_threshold: the relative period change beyond which a dominant frequency drifts (the alert rules read it)."}),
		publishErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "freqlens_model_publish_errors_total",
			Help: "Promoted versions that could not be published to the models topic."}),
	}
	level := []string{"level"}
	m.coverage = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "freqlens_interval_coverage_ratio",
		Help: "Recent fraction of published prediction-interval steps whose realised value fell inside, by nominal level (over about online.error_half_life steps)."}, level)
	m.nominal = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "freqlens_interval_nominal_ratio",
		Help: "The nominal coverage of each configured interval level (output.intervals); the alert rules compare the coverage with it."}, level)
	m.intervalScore = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "freqlens_interval_score",
		Help: "Recent mean interval (Winkler) score of the published prediction intervals, by nominal level, in units of each series' scale: the width plus 2/(1 − level) times how far a value fell outside. Lower is better; a band too wide shows here where coverage cannot show it."}, level)
	m.intervalWidth = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "freqlens_interval_width",
		Help: "Recent mean width of the published prediction intervals, by nominal level, in units of each series' scale."}, level)
	m.intervalCorrection = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "freqlens_interval_pool_correction",
		Help: "The pooled coverage correction that multiplies every tracked series' interval thresholds, by nominal level and side (lower, upper), the geometric mean over the channels: above 1 the bursts' misses widen the bands, below 1 they narrow them; it stays within 1/1.5 and 1.5."}, []string{"level", "side"})
	m.intervalScoreSum = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "freqlens_interval_score_sum_total",
		Help: "Interval (Winkler) scores of the published prediction-interval steps whose value was realised, added up, by nominal level, in units of each series' scale; divide its increase by freqlens_interval_scored_total's for the mean score over any range."}, level)
	m.intervalsScored = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "freqlens_interval_scored_total",
		Help: "Published prediction-interval steps whose value was realised, by nominal level."}, level)
	m.intervalsCovered = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "freqlens_interval_covered_total",
		Help: "Published prediction-interval steps whose realised value fell inside, by nominal level; divide its increase by freqlens_interval_scored_total's for the coverage over any range."}, level)
	m.stateRecords = prometheus.NewCounter(prometheus.CounterOpts{Name: "freqlens_online_state_records_written_total",
		Help: "Records this replica wrote to the state topic (topics.state): series states, tombstones and its pooled record."})
	m.stateBytes = prometheus.NewCounter(prometheus.CounterOpts{Name: "freqlens_online_state_bytes_written_total",
		Help: "Bytes (keys and values) this replica wrote to the state topic (topics.state)."})
	m.stateSkipped = prometheus.NewCounter(prometheus.CounterOpts{Name: "freqlens_online_state_records_skipped_total",
		Help: "Records of the state topic (topics.state) this build could not read, and skipped: their series start from the model's quantiles."})
	for _, o := range outcomes {
		m.rounds.WithLabelValues(string(o))
	}
	if err := registry.Register(reg, "online", m.period, m.periodSec, m.ratio, m.share, m.dominant,
		m.rhythmPeriod, m.rhythmRatio, m.rhythmShare, m.rhythmDominant, m.frequencyRhythm, m.alpha, m.lastPromotion,
		m.testMSE, m.mse, m.mae, m.absErr, m.errors, m.sqErr, m.absErrSum, m.rounds, m.holdoutMSE, m.events, m.pairs,
		m.replay, m.tracked, m.refused, m.publishErrors, m.driftThreshold,
		m.coverage, m.nominal, m.intervalScore, m.intervalWidth, m.intervalCorrection, m.intervalsScored, m.intervalsCovered, m.intervalScoreSum,
		m.stateRecords, m.stateBytes, m.stateSkipped); err != nil {
		return nil, err
	}
	return m, nil
}
