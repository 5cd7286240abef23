// Package model is FreqLens: a forecaster whose frequency part explains
// every forecast exactly, frequency by frequency.
//
// # Where it sits
//
// model turns windows into forecasts and attributions. It knows nothing of
// Kafka, Arrow, Prometheus or files other than its own safetensors model
// file; it imports gonum (tests only) and internal/gemm. The pipeline feeds
// it windows and times it; the online tuner trains copies of it.
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
//	c_i   = [Σ_t ψ̄_i(t)·h_t | Σ_t ψ̃_i(t)·h_t]    coefficients, N × 2d
//	s_i   = GELU(c_i·V₁ + v₁)·v₂ + β_i           selection score
//	S     = top-K of s                          (top-K of s + Gumbel noise in training)
//	g_f   = ReLU(c_f·A_f)·B_f                    one bias-free head per frequency, 2d → H·C
//	r     = GELU(vec(x̂)·R₁ + r₁)·R₂ + r₂         residual MLP, L·C → H·C
//	ŷ     = σ·(α·Σ_{f∈S} g_f + (1−α)·r) + μ      α = σ(w)
//
// Because the frequency part is a plain sum over fixed, per-frequency heads,
// α·σ·g_f is frequency f's Shapley value: the contributions and the residual
// add up to the forecast exactly (see Attribution), a frequency with zero
// coefficients contributes zero, and twin frequencies contribute alike.
//
// # Where it differs from the public reference code
//
//  1. One head per frequency (N heads, K evaluated), not one per rank slot,
//     so a contribution always names the same frequency.
//  2. Straight-through Gumbel top-K: hard top-K forward, the tempered softmax
//     gradient backward, so the selector learns; deterministic at inference.
//  3. Signed attributions that include α and the residual and are complete.
//  4. All channels scored, under the standard protocol.
//  5. A cosine and a sine atom per frequency, phase anchored at the window's
//     newest step. The reference projects on one cosine: a single
//     coefficient cannot tell where in its cycle the window ends, so a head
//     cannot continue the cycle and the residual MLP ends up carrying every
//     periodic pattern (on a synthetic 24-step feed the frequencies got ~4%
//     of the attribution). With the pair, head f sees the cycle's amplitude
//     and phase at the newest step, the point the forecast continues from,
//     and that meaning survives fine-tuning moving f.
//
// # Training
//
// Train minimises
//
//	MSE + λ_div·L_div + λ_recon·L_recon + λ_sparse·L_sparse + λ_var·L_var
//
// with L_div a log-barrier on the gaps between sorted log-frequencies,
// L_recon = ‖Ψ̄ᵀΨ̄·H − H‖² / (B·L·d) (how well the 2N atoms span the projected
// window), L_sparse the softmax mass outside the selected set, and L_var the
// squared difference between forecast and target standard deviations per
// window and channel. The gradient is written by hand (backward.go) and
// checked against finite differences and against gorgonia's automatic
// differentiation. Adam with cosine annealing, gradient clipping, early
// stopping and restoring the best epoch; θ and φ learn five times faster.
//
// # Concurrency
//
// Forward, Attribution and Evaluate only read the parameters, so goroutines
// may forecast with one Model concurrently, each with its own Workspace.
// Training changes the parameters in place: nothing else may use the model
// meanwhile. Train and Evaluate run a fixed number of shards on their own
// goroutines and wait for them before returning; Forward starts none. A
// training batch is always split into the same two shards, so a seed gives
// the same model on any number of cores.
package model
