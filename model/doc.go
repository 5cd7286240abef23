// Package model is FreqLens: a forecaster whose frequency part explains
// every forecast exactly, frequency by frequency.
//
// # Where it sits
//
// model turns windows into forecasts and attributions in the model's
// units, and takes one optimiser step at a time (Stepper). It knows
// nothing of Kafka, Arrow, Prometheus or files; it imports cycles (the
// spectrum's peaks and rhythms it places its frequencies on) and
// internal/gemm, and gonum in its tests' references. Around it: modelfile
// reads and writes it, explain applies it to windows in the data's units,
// measure scores it on a Source, training runs the training loop over its
// steps and online fine-tunes copies of a serving model.
//
// # The maths
//
// A window x has L steps of C channels. With instance normalisation each
// channel is centred and scaled by its own window mean μ and deviation σ
// (x̂ = (x − μ)/σ); the forecast is mapped back at the end. Then
//
//	h_t   = x̂_t·W + b                          input projection, C → d
//	f_i   = fmin + (fmax − fmin)·σ(θ_i)          N learnable frequencies, fmin = 1/(10L), fmax = ½
//	a_i   = 2π f_i (t − (L−1)) + φ_i             phase, anchored at the newest step
//	ψ̄_i   = cos a_i / ‖·‖,  ψ̃_i = sin a_i / ‖·‖   unit-length quadrature pair over t = 0 … L−1
//	c_i   = [Σ_t ψ̄_i(t)·h_t | Σ_t ψ̃_i(t)·h_t]    coefficients, N × 2d; for i ∉ R h_t reads u_t, below, not x̂_t
//	e_i   = Σ_c (ψ̄_iᵀ(x̂_c − m_c))² / Σ (x̂ − m)²  frequency i's share of the window's energy (both atoms)
//	s_i   = GELU(c_i·V₁ + v₁)·v₂ + β_i + log(e_i + 0.01)   selection score
//	S     = R ∪ top-(K−|R|) of s over i ∉ R      R: the rhythms' frequencies; Gumbel noise on s in training
//	g_f   = ReLU(c_f·A_f)·B_f                    one bias-free head per frequency, 2d → H·C
//	q_f   = a_f·cos(2πk_f ρ_r(τ+s)) + b_f·sin(…)   clock term of a rhythm's frequency (harmonic k_f of rhythm r), s = −(L−1) … H
//	x̃     = x̂ − Σ_f q_f(past)                     the window less what the clock says its rhythms put there
//	z_f,c = [ψ̄_fᵀ x̃_c | ψ̃_fᵀ x̃_c]              f ∈ R: its two coefficients of the window less the clock, per channel
//	b_f,c = P_f·z_f,c                            band head of a rhythm frequency: 2 → H, shared by the channels
//	u     = x̃ − Σ_{f∈R} Σ_{j∈f} ψ̄_j ψ̄_jᵀ x̃        … and less its projection on the rhythms' atoms (R: a fixed set)
//	r_c   = GELU(u_c·R₁ + r₁)·R₂ + r₂,c          residual MLP, one per channel with shared weights, L → H
//	        GELU([u_c | Σ_c' W_cc'(ρ_c)·u_c']·R₁ + r₁)·R₂ + r₂,c   … with the channel mix (mix.go), 2L → H
//	ŷ     = σ·(α·Σ_{f∈S} g_f + Σ_{f∈R} (q_f(future) + b_f) + (1−α)·r) + μ     α = σ(w)
//
// A rhythm (cycles.FindRhythms) is a fundamental period P_r with the frequencies at
// its harmonics: training groups the cycles placed on the training data's
// spectrum into rhythms (the day: 24h, 12h, 8h …; the week: the 168/k-hour
// lines that are not the day's) and puts each of their frequencies exactly
// on its harmonic k/P_r. The clock reads the time of the window's newest
// step τ (steps since the Unix epoch) and the rhythm's phase
// ρ_r(τ) = AnchorPhase + (τ − AnchorStep)/P_r, so a cycle longer than the
// window (a week seen through 96 hours) still has its place in it; with
// instance normalisation each term is centred on its mean over the window.
// A model that reads the clock (ReadsTime) therefore takes each window's
// end time: Forward (and explain.Explainer) take the windows' times, and
// training needs a TimedSource.
//
// A frequency outside the rhythms reads u, what the rhythms leave of the
// window, so that its head cannot map a cycle's leakage into its
// coefficients to that cycle's continuation: what the rhythms explain is
// theirs. The energy prior e_i stays the whole window's.
//
// Frequency f's part of the forecast is σ·(α·1[f∈S]·g_f + q_f(future) + b_f).
// Nothing in it depends on which other frequencies take part, and nothing
// else depends on it: the residual's input, and the other frequencies',
// leave out the rhythms as a fixed set, not the selection, and a band head
// reads only its own frequency's coefficients. So the forecast is an additive game over
// the frequencies and each part is its frequency's Shapley value: the parts
// and the residual add up to the forecast exactly (Completeness), removing
// a frequency (Workspace.Without) moves the forecast by exactly its part
// (Faithfulness), a frequency that adds nothing gets nothing (Null), and
// twin frequencies get the same (Symmetry). A rhythm's part is the sum of
// its frequencies'. The window's mean μ is counted in the residual's part
// (Attribution.Residual, and alone as Attribution.Level), so that the parts
// add up to the forecast in the data's units. Because the parts are
// faithful, predict --without, the live view's click on a part and eval
// --perturbation show the model's own forecast without a frequency.
//
// Shares are counted by cycle, once, where the model attributes: a
// rhythm's lines partly cancel, so a share that summed their sizes would
// overstate the cycle. Attribution (and Workspace.AddShares, which counts
// the same without building the parts) weighs each rhythm by Σ|its summed
// part| against each free frequency's Σ|part| and the residual's
// Σ|part − μ|, in the model's units, so a mixed model's z-scored channels
// weigh alike. Tools read these shares and never re-derive a cycle's from
// its lines.
//
// # Choices the code relies on
//
// docs/model.md says where the model differs from the public reference
// code and why, with the measurements. The code relies on these: one head
// per frequency, with a cosine and a sine atom phased at the window's
// newest step; a straight-through Gumbel top-K over the frequencies
// outside the rhythms (hard top-K forward, so gates are exactly 1 and the
// parts exact; the tempered softmax's gradient backward; deterministic at
// inference), with log(e_i + 0.01) in the score and the rhythms' frequencies
// in every selection; frequencies placed on the training rows' cycles
// (PlaceOnSpectrum) and left there by training, moved online to the recent
// spectrum's peaks (TrackRhythms, TrackCycles); and the residual and the
// free frequencies reading the window less the rhythms as a fixed set,
// which keeps the game additive; the channel mix (Config.ChannelMix)
// changes only what the residual reads, so it keeps it too. Package
// modelfile stores this maths: format 7, or 8 with the channel mix.
//
// # Training
//
// A Stepper takes one optimiser step on a batch of a Source's windows,
// drawing the Gumbel noise, dropout masks and input noise from its
// caller's random generator, and minimises
//
//	MSE + λ_div·L_div + λ_recon·L_recon + λ_sparse·L_sparse + λ_var·L_var
//
// with L_div a log-barrier on the gaps between sorted log-frequencies,
// L_recon = ‖Ψ̄ᵀΨ̄·H − H‖² / (B·L·d) (how well the 2N atoms span the projected
// window), L_sparse the softmax mass outside the selected set, and L_var the
// squared difference between forecast and target standard deviations per
// window and channel. The gradient is written by hand (backward.go) and
// checked against finite differences and gorgonia's automatic
// differentiation (the oracle names every node uniquely: gorgonia
// hash-conses nodes). The step clips the whole gradient and takes one Adam
// step (θ and φ at a scaled rate), skipping the parameters whose gradient
// and moments are zero, which it would leave as they are; it keeps a
// moving average when asked. Stepper.Freeze holds tensors back (gradient
// cleared, Adam skips them). The recipe is the callers': training.Train
// and online.FineTune. A mixed model trains with its channels shuffled
// (StepConfig.ChannelShuffle), so it keeps each channel's identity but not
// the training period's co-movement, which it would otherwise overfit.
//
// # Time zones
//
// A model with Meta.TimeZone reads a window whose steps or horizon
// straddle a change of the zone's offset on wall-clock steps (linear
// interpolation from the real ones), forecasts there, and puts the
// forecast and every part back on the real steps by one set of weights
// summing to one, so the parts stay complete and faithful; training fits
// such targets on wall-clock steps (wallclock.go). This happens at the
// model's edges (Forward, Attribution, the training batcher), so that the
// forward and backward passes keep one fixed clock table; a window the
// offset does not change in costs one ZoneBounds lookup.
//
// # How it computes
//
// Coefficients are computed in input space:
//
//	c = Ψ̄·(x̂·W + 1·bᵀ) = (Ψ̄·[x̂ | 1])·W̃
//
// projects the C+1 input columns onto the 2N atoms first, 2N·L·(C+1)
// products instead of 2N·L·d, and W̃ (the input weight with its bias row)
// is contiguous in the parameters, so one product does it. The
// reconstruction loss factorises the same way: ‖(Ψ̄ᵀΨ̄ − I)·X̃·W̃‖² =
// tr(W̃ᵀQW̃) with Q = Σ_b E_bᵀE_b, a (C+1)×(C+1) matrix. The free
// frequencies' projections of u are not computed from u: the forward pass
// takes Ψ̄·[x̂ | 1] less what the clock and the rhythms' projection put
// there, through two 2N × 2M matrices the Workspace keeps until the basis
// or the clock changes (leftover.go), and the backward pass sends their
// gradient through u to the clock and the rhythms' atoms. A model whose
// rhythms take every place reads no other frequency and computes none of
// this.
//
// After selection the (window, rank) slots are grouped by frequency, so
// each selected head runs one matrix product over all the windows that
// chose it. The matrix products, GELU and Adam's update are internal/gemm's
// kernels.
//
// # Concurrency
//
// Forward and Attribution only read the parameters, so goroutines may
// forecast with one Model concurrently, each with its own Workspace.
// Training changes the parameters in place: nothing else may use the model
// meanwhile. A Stepper runs a fixed number of shards on its own goroutines
// and waits for them before returning; Forward starts none.
//
// A training step runs the whole batch in one Workspace; its heavy
// sections (heads, residual MLP, Adam) are always cut into the same two
// parts, by head, by output column or by parameter range, never along a
// sum, so every number is computed in the same order and a seed gives the
// same model on any number of cores. The sections are named constants run by a switch, not
// closures, so the inference path that shares the code allocates nothing.
package model
