package model

import "github.com/freqlens/freqlens/internal/scratch"

// Workspace holds the scratch buffers of forward passes (and, for training,
// backward passes) of up to a batch of windows. It grows on first use of a
// larger batch and then allocates nothing. After a forward pass it also
// holds everything needed to explain each window (see Workspace.Attribution).
//
// A Workspace is not safe for concurrent use: give each goroutine its own.
// It fits any model with the same Config; used with a model whose rhythms
// select another number of frequencies per window, it allocates its
// buffers again, once.
type Workspace struct {
	cfg Config
	cap int // windows the buffers hold
	n   int // windows in the last forward pass
	m   *Model

	xn, mu, sd           []float64 // normalised windows n·L·C; per-window channel mean, std n·C
	xr                   []float64 // n·L·C: the residual MLP's input, x̂ less its selected cycles
	resIn                []float64 // what the residual MLP read: xr, or xn without rhythms
	resX                 []float64 // the residual MLP's input rows: resIn, or resT (one row per channel)
	resT                 []float64 // n·C·L: resIn channel by channel
	resM                 []float64 // n·C·2L: resT's rows, each followed by the channels' mix (Config.ChannelMix), else empty
	mixW                 []float64 // C·C: one window's channel mix (Config.ChannelMix), else empty
	mixRows              []float64 // C·L: one window's mixed rows, or their gradient (Config.ChannelMix)
	resOut               []float64 // n·C·H: the residual MLP's output rows before the bias (one row per channel)
	xc                   []float64 // n·C: per-window channel means of x̂ (0 with instance norm)
	energy               []float64 // n: Σ (x̂ − mean)² of each window
	eshare               []float64 // n·N: each frequency's share of its window's energy
	y                    []float64 // n·2N·(C+1): Ψ̄·[x̂ | 1]
	yh                   []float64 // n·2N·(C+1): what the coefficients read: y, or y's rhythm rows and Ψ̄·[u | 1] for the others
	yfree                []float64 // n·2N·(C+1): yh's storage when it is not y (Model.freeReadsLeftover)
	psiTab, psiAtoms     []float64 // 2N·2M: −Ψ̄·(the clock table's window rows), −Ψ̄·(the rhythms' atoms)ᵀ
	psiBasis             *basis    // the basis psiTab and psiAtoms were computed from (nil: none yet) …
	psiGen               uint64    // … at this compute of it …
	psiClock             *clock    // … and the clock
	coef                 []float64 // n·N·2d: the coefficients c_i (not computed by a lean pass)
	qscore               []float64 // 2(C+1)·S: the scorer's first layer folded into W̃ (lean passes)
	zpre, ztanh, z       []float64 // n·N·S: scorer pre-activation, its tanh, GELU output
	score                []float64 // n·N: selection logits
	sel                  []int32   // n·K: selected frequency ids: the rhythms', then the others best first
	pos                  []int32   // n·K: grouped slot of each selection
	slotSel              []int32   // n·K: the selection (window·K + rank) of each grouped slot
	groupStart           []int32   // N+1: first grouped slot of each head
	cursor               []int32   // N: fill cursor while grouping
	groupWin             []int32   // n·K: window of each grouped slot
	gcoef, hidden        []float64 // n·K·2d, n·K·E: head inputs and ReLU outputs, grouped
	contrib              []float64 // n·K·H·C: head outputs g_f(c_f), grouped
	freqSum              []float64 // n·H·C: Σ_{f∈S} g_f(c_f)
	rpre, rtanh, rh, res []float64 // residual MLP: rows·R three times (rows: n, or n·C), n·H·C
	topv                 []float64 // K: top-K scratch
	masked               []float64 // N: one window's logits without the rhythms' frequencies
	attrHead, attrSD     []float64 // H·C: α·σ and σ per output position (Attribution)
	attrLevel            []float64 // H·C: μ per output position (Attribution)
	attrClock            []float64 // H·C: a clock term (Attribution)
	attrRhythm           []float64 // R·H·C: each rhythm's summed part (shares at the level of cycles), sized on first use
	tauIn, tau           []float64 // n·C: window end times in steps since the epoch (Forward's, the pass's)
	ab                   []float64 // n·2N·C: clock coefficients (A, B) of each rhythm frequency
	abKept               []float64 // 2N·C: one window's (A, B) without the removed frequencies
	qprof                []float64 // n·(L+H)·C: the clock's terms over window and horizon
	xt                   []float64 // n·L·C: the window less the clock's terms
	zfix                 []float64 // n·2N·C: projections of xt on the rhythm frequencies' atoms
	ratoms               []float64 // 2N·L: the rhythm frequencies' atoms, gathered
	zneg                 []float64 // 2N·C: one window's −zfix
	band                 []float64 // n·H·C: the band heads' sum
	pband                []float64 // 2N·H: the rhythm frequencies' band weights, gathered
	// wall is the wall-clock view of the last pass (see wallclock.go),
	// sized on first use: walled says its windows were read on wall-clock
	// steps and its forecasts put back on real ones; then wallOn says which
	// did (their offset changed) and wallShift holds each one's shifts
	// (L+H), which Attribution applies to the parts. wallX holds Forward's
	// windows on wall-clock steps.
	walled           bool
	wallOn           []bool
	wallShift, wallX []float64
	wallTmp          *wallScratch
	wallAttr         Attribution // AddShares' attribution of a window read on wall-clock steps
	// without, when set, removes frequencies from every pass: their heads
	// are dropped from the selection (not replaced) and their clock terms
	// are zero (see Workspace.Without).
	without, withoutBuf []bool
	headSplit           int // heads [0, headSplit) are part 0's, the rest part 1's
	// lean is set for a pass that no backward pass follows (draws nil)
	// when 2(C+1) < 2d: it computes the coefficients c_i only for the
	// selected frequencies, and the scorer reads each frequency's
	// projections [y_cos | y_sin] through its first layer folded into W̃,
	// the same products in another order.
	lean bool
	bk   backwardConsts

	// par, when set, runs ws.run(s, 0) and ws.run(s, 1) and returns when
	// both are done (training sets it to use two cores); nil runs one part.
	par   func(s section)
	draws *stepDraws // the training draws of the pass in progress

	tr *trainScratch // nil until the workspace is used for training
}

// trainScratch holds what only the training path needs.
type trainScratch struct {
	noisy, prob []float64 // n·N: perturbed logits, their tempered softmax
	dyn, dr     []float64 // n·H·C
	drh         []float64 // rows·R (rows: n, or n·C)
	drT         []float64 // n·C·H: ∂L/∂r channel by channel
	gT          []float64 // n·C·L: ∂L/∂(residual input) channel by channel
	dmixW       []float64 // C·C: one window's ∂L/∂(channel mix) (Config.ChannelMix)
	gMix        []float64 // n·C·2L: ∂L/∂(the residual's input rows with the mix) (Config.ChannelMix)
	dO, dA, dG  []float64 // grouped n·K·H·C, n·K·E, n·K·2d
	dm          []float64 // n·K, grouped: ∂L/∂gate
	dscore      []float64 // n·N
	dz          []float64 // n·N·S
	dcoef       []float64 // n·N·2d
	dY          []float64 // n·2N·(C+1): ∂L/∂y
	dYh         []float64 // n·2N·(C+1): ∂L/∂yh (less its rhythm rows, ∂L/∂(Ψ̄·[u | 1]))
	dxr         []float64 // n·L·C: ∂L/∂(residual input)
	recE, recG  []float64 // L·(C+1) per-window scratch of the reconstruction loss
	recQ        []float64 // (C+1)·(C+1): Σ_b E_bᵀE_b
	dPsibar     []float64 // 2N·L
	onesAcc     []float64 // 2N: gradient reaching the atoms through the constant column
	dq          []float64 // n·(L+H)·C: ∂L/∂(clock terms)
	dab         []float64 // 2N·C: ∂L/∂(A, B) of one window
	dxt         []float64 // n·L·C: ∂L/∂x̃
	dratoms     []float64 // 2N·L: ∂L/∂(the rhythms' gathered atoms), negated
	dzband      []float64 // 2N·C: ∂L/∂zfix of one window through the band heads
	dpband      []float64 // 2N·H: ∂L/∂pband
	sparse      float64   // Σ_b Σ_{i∉S_b} p_bi of the last backward
	grad        *Params
}

// NewWorkspace returns a workspace for batches of up to maxBatch windows of m.
func (m *Model) NewWorkspace(maxBatch int) *Workspace {
	ws := &Workspace{cfg: m.cfg, m: m}
	ws.grow(max(maxBatch, 1))
	return ws
}

// refit makes ws, made for a model of the same shapes whose rhythms select
// another number of frequencies per window (SetRhythms changed them), fit
// cfg: it allocates its buffers again, once.
func (ws *Workspace) refit(cfg Config) {
	ws.cfg = cfg
	c := ws.cap
	ws.cap = 0
	ws.grow(c)
}

// grow makes the buffers hold n windows.
func (ws *Workspace) grow(n int) {
	if n <= ws.cap {
		return
	}
	cfg := ws.cfg
	L, C, H := cfg.Lookback, cfg.Channels, cfg.Horizon
	d, N, K, S, E, R := cfg.Hidden, cfg.Frequencies, cfg.slots(), cfg.ScorerHidden, cfg.HeadHidden, cfg.ResidualHidden
	HC, C1 := H*C, C+1
	ws.cap = n
	ws.xn = make([]float64, n*L*C)
	ws.xr = make([]float64, n*L*C)
	ws.xc = make([]float64, n*C)
	ws.energy = make([]float64, n)
	ws.eshare = make([]float64, n*N)
	ws.mu = make([]float64, n*C)
	ws.sd = make([]float64, n*C)
	ws.y = make([]float64, n*2*N*C1)
	// A model without rhythms, or whose rhythms take every place, reads
	// every coefficient off y (Model.freeReadsLeftover).
	ws.yfree, ws.psiTab, ws.psiAtoms, ws.psiBasis = nil, nil, nil, nil
	if cfg.rhythmSlots > 0 && cfg.competes() {
		ws.yfree = make([]float64, n*2*N*C1)
		ws.psiTab, ws.psiAtoms = make([]float64, 2*N*2*N), make([]float64, 2*N*2*N)
	}
	// The coefficients and the scorer's hidden layer are the largest
	// buffers (n·N·2d and 3·n·N·S) and a serving pass often needs neither
	// (a lean pass computes no coefficients; a model whose rhythms take
	// every place scores nothing), so the pass that needs them sizes them
	// to the capacity on first use (sizeCoef, sizeScorer).
	ws.coef, ws.zpre, ws.ztanh, ws.z = nil, nil, nil, nil
	ws.qscore = make([]float64, 2*C1*S)
	ws.score = make([]float64, n*N)
	ws.sel = make([]int32, n*K)
	ws.pos = make([]int32, n*K)
	ws.slotSel = make([]int32, n*K)
	ws.groupStart = make([]int32, N+1)
	ws.cursor = make([]int32, N)
	ws.groupWin = make([]int32, n*K)
	ws.gcoef = make([]float64, n*K*2*d)
	ws.hidden = make([]float64, n*K*E)
	ws.contrib = make([]float64, n*K*HC)
	ws.freqSum = make([]float64, n*HC)
	pw, _, _ := cfg.residualShape()
	ws.rpre = make([]float64, n*pw*R)
	ws.rtanh = make([]float64, n*pw*R)
	ws.rh = make([]float64, n*pw*R)
	ws.resT = make([]float64, n*L*C)
	if cfg.ChannelMix {
		ws.resM = make([]float64, n*2*L*C)
		ws.mixW = make([]float64, C*C)
		ws.mixRows = make([]float64, C*L)
	}
	ws.resOut = make([]float64, n*H*C)
	ws.res = make([]float64, n*HC)
	ws.topv = make([]float64, K)
	ws.masked = make([]float64, N)
	ws.attrHead = make([]float64, HC)
	ws.attrSD = make([]float64, HC)
	ws.attrLevel = make([]float64, HC)
	ws.attrClock = make([]float64, HC)
	ws.tauIn = make([]float64, n*C)
	ws.tau = make([]float64, n*C)
	ws.ab = make([]float64, n*2*N*C)
	ws.abKept = make([]float64, 2*N*C)
	ws.qprof = make([]float64, n*(L+H)*C)
	ws.xt = make([]float64, n*L*C)
	ws.zfix = make([]float64, n*2*N*C)
	ws.ratoms = make([]float64, 2*N*L)
	ws.zneg = make([]float64, 2*N*C)
	ws.band = make([]float64, n*HC)
	ws.pband = make([]float64, 2*N*H)
	if ws.tr != nil {
		ws.tr = nil
		ws.enableTraining()
	}
}

// sizeCoef makes ws.coef hold the capacity's coefficients.
func (ws *Workspace) sizeCoef() {
	ws.coef = scratch.Resize(ws.coef, ws.cap*ws.cfg.Frequencies*2*ws.cfg.Hidden)
}

// sizeScorer makes the scorer's hidden-layer buffers hold the capacity's
// windows.
func (ws *Workspace) sizeScorer() {
	k := ws.cap * ws.cfg.Frequencies * ws.cfg.ScorerHidden
	ws.zpre, ws.ztanh, ws.z = scratch.Resize(ws.zpre, k), scratch.Resize(ws.ztanh, k), scratch.Resize(ws.z, k)
}

// enableTraining allocates the backward-pass scratch for the current capacity.
func (ws *Workspace) enableTraining() {
	if ws.tr != nil {
		return
	}
	cfg := ws.cfg
	L, C, H := cfg.Lookback, cfg.Channels, cfg.Horizon
	d, N, K, S, E, R := cfg.Hidden, cfg.Frequencies, cfg.slots(), cfg.ScorerHidden, cfg.HeadHidden, cfg.ResidualHidden
	HC, C1, n := H*C, C+1, ws.cap
	ws.tr = &trainScratch{
		noisy:   make([]float64, n*N),
		prob:    make([]float64, n*N),
		dyn:     make([]float64, n*HC),
		dr:      make([]float64, n*HC),
		drh:     make([]float64, n*C*R),
		drT:     make([]float64, n*HC),
		gT:      make([]float64, n*L*C),
		dO:      make([]float64, n*K*HC),
		dA:      make([]float64, n*K*E),
		dG:      make([]float64, n*K*2*d),
		dm:      make([]float64, n*K),
		dscore:  make([]float64, n*N),
		dz:      make([]float64, n*N*S),
		dcoef:   make([]float64, n*N*2*d),
		dY:      make([]float64, n*2*N*C1),
		dYh:     make([]float64, n*2*N*C1),
		dxr:     make([]float64, n*L*C),
		recE:    make([]float64, L*C1),
		recG:    make([]float64, L*C1),
		recQ:    make([]float64, C1*C1),
		dPsibar: make([]float64, 2*N*L),
		onesAcc: make([]float64, 2*N),
		dq:      make([]float64, n*(L+H)*C),
		dab:     make([]float64, 2*N*C),
		dxt:     make([]float64, n*L*C),
		dratoms: make([]float64, 2*N*L),
		dzband:  make([]float64, 2*N*C),
		dpband:  make([]float64, 2*N*H),
		grad:    newParams(cfg),
	}
	if cfg.ChannelMix {
		ws.tr.gMix = make([]float64, n*2*L*C)
		ws.tr.dmixW = make([]float64, C*C)
	}
}

// parts is the number of parts the split sections of a pass run in.
func (ws *Workspace) parts() int {
	if ws.par == nil {
		return 1
	}
	return 2
}

// section names a split part of a forward or backward pass. Sections are
// named rather than passed as closures so that a pass allocates nothing.
type section int

const (
	secHeadsAndHidden section = iota
	secResidualOut
	secBackward
)

// do runs section s: every part of it.
func (ws *Workspace) do(s section) {
	if ws.par == nil {
		ws.run(s, 0)
		return
	}
	ws.par(s)
}

// run runs one part of section s.
func (ws *Workspace) run(s section, part int) {
	switch s {
	case secHeadsAndHidden:
		ws.m.headsAndHidden(ws, part)
	case secResidualOut:
		ws.m.residualOut(ws, part)
	case secBackward:
		ws.m.headsAndResidualBackward(ws, part)
	}
}

// headRange is the heads part handles.
func (ws *Workspace) headRange(part int) (lo, hi int) {
	N := ws.cfg.Frequencies
	switch {
	case ws.par == nil:
		return 0, N
	case part == 0:
		return 0, ws.headSplit
	}
	return ws.headSplit, N
}

// wallBuffers sizes the wall-clock buffers for n windows.
func (ws *Workspace) wallBuffers(n int) {
	L, H, C := ws.cfg.Lookback, ws.cfg.Horizon, ws.cfg.Channels
	if len(ws.wallOn) < n {
		ws.wallOn = make([]bool, n)
		ws.wallShift = make([]float64, n*(L+H))
		ws.wallX = make([]float64, n*L*C)
	}
	if ws.wallTmp == nil {
		ws.wallTmp = newWallScratch(L, H)
	}
}

// Selection returns the ids of the frequencies window i of the last pass
// selected (SelectedPerWindow of them): the rhythms' first, then the
// others best first. It is what a measurement counts to say how often
// each frequency is used (Metrics.Selected). The slice is the
// workspace's, overwritten by the next pass.
func (ws *Workspace) Selection(i int) []int32 {
	K := ws.cfg.slots()
	return ws.sel[i*K : (i+1)*K]
}
