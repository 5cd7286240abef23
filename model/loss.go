package model

import "math"

// varEps keeps the standard deviation of a flat forecast differentiable.
const varEps = 1e-5

// outputLoss returns the forecast losses of n windows and writes their
// gradient with respect to the forecasts to dOut:
//
//	L_mse = 1/(B·H·C) · Σ (ŷ − y)²
//	L_var = 1/(B·C)   · Σ_{b,c} (sd_h ŷ_bc − sd_h y_bc)²,  sd = √(var_h + ε)
//
// B is the whole step's batch (n may be a shard of it), so shard losses and
// gradients add up to the batch's. dOut holds ∂(L_mse + λ_var·L_var)/∂ŷ.
func outputLoss(dOut, yhat, target []float64, n, H, C, batch int, lambdaVar float64) (mse, varLoss float64) {
	HC := H * C
	k := 1 / float64(batch*HC)
	for i := range yhat[:n*HC] {
		e := yhat[i] - target[i]
		mse += e * e
		dOut[i] = 2 * k * e
	}
	mse *= k
	if lambdaVar == 0 {
		return mse, 0
	}
	kv := 1 / float64(batch*C)
	for b := range n {
		yb, tb, db := yhat[b*HC:(b+1)*HC], target[b*HC:(b+1)*HC], dOut[b*HC:(b+1)*HC]
		for c := range C {
			mp, mt := 0.0, 0.0
			for h := range H {
				mp += yb[h*C+c]
				mt += tb[h*C+c]
			}
			mp /= float64(H)
			mt /= float64(H)
			vp, vt := 0.0, 0.0
			for h := range H {
				dp, dt := yb[h*C+c]-mp, tb[h*C+c]-mt
				vp += dp * dp
				vt += dt * dt
			}
			sp := math.Sqrt(vp/float64(H) + varEps)
			st := math.Sqrt(vt/float64(H) + varEps)
			diff := sp - st
			varLoss += kv * diff * diff
			// ∂sp/∂ŷ_h = (ŷ_h − mean)/(H·sp); the mean's own term sums to zero.
			gk := lambdaVar * 2 * kv * diff / (float64(H) * sp)
			for h := range H {
				db[h*C+c] += gk * (yb[h*C+c] - mp)
			}
		}
	}
	return mse, varLoss
}
