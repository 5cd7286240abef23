package gemm

import "math"

// AdamConsts are the per-tensor numbers of one Adam step:
//
//	g' = Clip·g
//	m  = Beta1·m + OneMinusBeta1·g'
//	v  = Beta2·v + OneMinusBeta2·(g'·g')
//	p  = p − (Step·m / (√v·InvSqrtBC2 + Eps) + Decay·p)
//
// Step is the learning rate over the first-moment bias correction,
// InvSqrtBC2 is 1/√(second-moment bias correction) and Decay is the
// learning rate times AdamW's decoupled weight decay.
type AdamConsts struct {
	Clip, Beta1, OneMinusBeta1, Beta2, OneMinusBeta2, Step, InvSqrtBC2, Eps, Decay float64
}

// AdamStep applies one Adam step to p with gradient g and moments m and v,
// all of the same length, and clears g for the next step. The assembly and
// the Go versions use no fused multiply-add, so both give the same bits.
//
// It is the element-wise hot loop of training: every parameter, every step,
// with a square root and a division each, which vectorise four at a time.
func AdamStep(p, g, m, v []float64, k *AdamConsts) {
	n := len(p)
	if len(g) != n || len(m) != n || len(v) != n {
		panic("gemm: AdamStep: p, g, m and v differ in length")
	}
	if n == 0 {
		return
	}
	adamAsm(p, g, m, v, k)
}

func adamGeneric(p, g, m, v []float64, k *AdamConsts) {
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	for i := range p {
		gi := g[i] * k.Clip
		mi := float64(k.Beta1*m[i]) + float64(k.OneMinusBeta1*gi)
		vi := float64(k.Beta2*v[i]) + float64(k.OneMinusBeta2*float64(gi*gi))
		m[i], v[i] = mi, vi
		den := float64(math.Sqrt(vi)*k.InvSqrtBC2) + k.Eps
		p[i] -= float64(float64(k.Step*mi)/den) + float64(k.Decay*p[i])
		g[i] = 0
	}
}
