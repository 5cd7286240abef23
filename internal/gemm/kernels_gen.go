//go:build ignore

// This program generates kernels_amd64.s, the AVX2+FMA micro-kernels of
// package gemm. Run it with
//
//	go generate ./internal/gemm/
//
// The kernels are written out by a program rather than by hand because the
// register blocking (rows × vectors per kernel, masked and shifted column
// tails) is regular but long, and one template keeps all variants in step.
//
// Register conventions shared by the NN and TN kernels
// (func(k int, a *float64, lda int, b *float64, ldb int, c *float64, ldc, n, over int)):
//
//	DI  k                 R8  A, rows 0-2 (advances along k)
//	R10 lda·8             R9  A, rows 3-5 (NN only)
//	R12 ldb·8             R11 B at the current k and column block
//	DX  ldc·8             SI  C rows 0-2 at the current column block
//	BX  columns left      R13 C rows 3-5, or the mask table
//	CX  column offset·8   AX  loop counter
//
// The NT kernels use the same registers except that CX holds the start of
// the current block of B rows and R9 points at its fourth row.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
)

type asm struct{ b bytes.Buffer }

func (g *asm) i(format string, args ...any) { fmt.Fprintf(&g.b, "\t"+format+"\n", args...) }
func (g *asm) label(name string)            { fmt.Fprintf(&g.b, "%s:\n", name) }
func (g *asm) raw(s string)                 { g.b.WriteString(s) }

func y(n int) string {
	if n < 0 || n > 15 {
		log.Panicf("register Y%d out of range", n)
	}
	return fmt.Sprintf("Y%d", n)
}

const maskReg = 15

// mm describes one NN or TN kernel: mr rows of C, and the column-block widths
// in 4-double vectors that it tries in turn (the last one is always 1, and a
// shifted or masked 1-vector block finishes the last 1-3 columns).
type mm struct {
	name   string
	trans  bool
	mr     int
	widths []int
}

// mode says how a column block reads B and updates C.
type mode int

const (
	// full blocks cover 4·w columns.
	full mode = iota
	// shifted blocks cover the last 1-3 columns (BX) when n ≥ 4: they
	// compute the 4 columns ending at column n with plain loads and add only
	// the last BX lanes to C, by a blend before a full store.
	shifted
	// masked blocks cover the last 1-3 columns when n < 4, reading B and
	// C with masked loads and writing C with masked stores.
	masked
)

// regs returns the register plan for a block of w vectors; blocks other
// than full ones keep Y15 for the lane mask.
func (k mm) regs(w int, md mode) (acc func(r, v int) int, breg func(v int) int, bcs []int) {
	acc = func(r, v int) int { return r*w + v }
	next := k.mr * w
	nb := 0
	if k.mr > 1 || md == masked {
		nb = w
		if k.mr == 1 {
			nb = 1
		}
	}
	base := next
	breg = func(v int) int { return base + v }
	next += nb
	limit := 16
	if md != full {
		limit = maskReg
	}
	for len(bcs) < 2 && next < limit {
		bcs = append(bcs, next)
		next++
	}
	if len(bcs) == 0 || next > limit {
		log.Panicf("%s: no registers left for w=%d mode=%v", k.name, w, md)
	}
	return acc, breg, bcs
}

// aAddr returns the address of A(row r, current k) relative to the A
// pointers.
func (k mm) aAddr(r int) string {
	if k.trans {
		return fmt.Sprintf("%d(R8)", 8*r)
	}
	base := "R8"
	if r >= 3 {
		base = "R9"
	}
	switch r % 3 {
	case 0:
		return fmt.Sprintf("(%s)", base)
	case 1:
		return fmt.Sprintf("(%s)(R10*1)", base)
	default:
		return fmt.Sprintf("(%s)(R10*2)", base)
	}
}

// cAddr returns the address of C(row r, column block + 4v).
func cAddr(r, v int) string {
	base := "SI"
	if r >= 3 {
		base = "R13"
	}
	switch r % 3 {
	case 0:
		return fmt.Sprintf("%d(%s)", 32*v, base)
	case 1:
		return fmt.Sprintf("%d(%s)(DX*1)", 32*v, base)
	default:
		return fmt.Sprintf("%d(%s)(DX*2)", 32*v, base)
	}
}

func (k mm) step(g *asm, w int, md mode) {
	acc, breg, bcs := k.regs(w, md)
	inReg := k.mr > 1 || md == masked
	if inReg {
		nb := w
		if k.mr == 1 {
			nb = 1
		}
		for v := 0; v < nb; v++ {
			if md == masked {
				g.i("VMASKMOVPD %d(R11), %s, %s", 32*v, y(maskReg), y(breg(v)))
			} else {
				g.i("VMOVUPD %d(R11), %s", 32*v, y(breg(v)))
			}
		}
	}
	for r := 0; r < k.mr; r++ {
		bc := y(bcs[r%len(bcs)])
		g.i("VBROADCASTSD %s, %s", k.aAddr(r), bc)
		for v := 0; v < w; v++ {
			if inReg {
				g.i("VFMADD231PD %s, %s, %s", y(breg(v)), bc, y(acc(r, v)))
			} else {
				g.i("VFMADD231PD %d(R11), %s, %s", 32*v, bc, y(acc(r, v)))
			}
		}
	}
	g.i("ADDQ R12, R11")
	if k.trans {
		g.i("ADDQ R10, R8")
	}
}

func (k mm) advanceA(g *asm) {
	if k.trans {
		return
	}
	g.i("ADDQ $8, R8")
	if k.mr > 3 {
		g.i("ADDQ $8, R9")
	}
}

// block emits one column block of w vectors, or the block of the last 1-3
// columns (BX) for the shifted and masked modes.
func (k mm) block(g *asm, w int, md mode) {
	var pre string
	switch md {
	case full:
		pre = fmt.Sprintf("%s_w%d", k.name, w)
	case shifted:
		pre = k.name + "_shift"
	case masked:
		pre = k.name + "_mask"
	}
	acc, _, _ := k.regs(w, md)
	g.label(pre)
	switch md {
	case full:
		g.i("CMPQ BX, $%d", 4*w)
		g.i("JLT %s", k.next(w))
	case shifted:
		g.i("TESTQ BX, BX")
		g.i("JEQ %s_end", k.name)
		g.i("CMPQ n+56(FP), $4")
		g.i("JLT %s_mask", k.name)
		// Move back to column n-4 and select the last BX lanes.
		g.i("LEAQ -32(CX)(BX*8), CX")
		g.i("LEAQ maskTable<>+32(SB), R13")
		g.i("VMOVUPD (R13)(BX*8), %s", y(maskReg))
	case masked:
		// Select the first BX lanes.
		g.i("LEAQ maskTable<>+32(SB), R13")
		g.i("MOVQ BX, AX")
		g.i("SHLQ $3, AX")
		g.i("SUBQ AX, R13")
		g.i("VMOVUPD (R13), %s", y(maskReg))
	}
	g.i("MOVQ a+8(FP), R8")
	if !k.trans && k.mr > 3 {
		g.i("LEAQ (R8)(R10*2), R9")
		g.i("ADDQ R10, R9")
	}
	g.i("MOVQ b+24(FP), R11")
	g.i("ADDQ CX, R11")
	for r := 0; r < k.mr; r++ {
		for v := 0; v < w; v++ {
			g.i("VXORPD %s, %s, %s", y(acc(r, v)), y(acc(r, v)), y(acc(r, v)))
		}
	}
	g.i("MOVQ DI, AX")
	g.i("PCALIGN $32")
	g.label(pre + "_loop")
	k.step(g, w, md)
	k.advanceA(g)
	g.i("DECQ AX")
	g.i("JNE %s_loop", pre)
	g.label(pre + "_store")
	g.i("MOVQ c+40(FP), SI")
	g.i("ADDQ CX, SI")
	if k.mr > 3 {
		g.i("LEAQ (SI)(DX*2), R13")
		g.i("ADDQ DX, R13")
	}
	g.i("CMPQ over+64(FP), $0")
	g.i("JNE %s_over", pre)
	k.store(g, w, md, false)
	k.nextBlock(g, w, md, pre)
	g.label(pre + "_over")
	k.store(g, w, md, true)
	k.nextBlock(g, w, md, pre)
}

// store writes the accumulators of a block to C: added to what C holds, or,
// when over is set, in its place. The accumulators start at +0 and a fused
// multiply-add onto +0 never yields −0, so storing them is bit for bit what
// adding them to a cleared C stores.
func (k mm) store(g *asm, w int, md mode, over bool) {
	acc, breg, _ := k.regs(w, md)
	for r := 0; r < k.mr; r++ {
		for v := 0; v < w; v++ {
			a := y(acc(r, v))
			switch md {
			case full:
				if !over {
					g.i("VADDPD %s, %s, %s", cAddr(r, v), a, a)
				}
				g.i("VMOVUPD %s, %s", a, cAddr(r, v))
			case shifted:
				// The lanes before the last BX were written by the block
				// before; the blend keeps them.
				tmp := y(breg(0))
				g.i("VMOVUPD %s, %s", cAddr(r, v), tmp)
				if !over {
					g.i("VADDPD %s, %s, %s", tmp, a, a)
				}
				g.i("VBLENDVPD %s, %s, %s, %s", y(maskReg), a, tmp, a)
				g.i("VMOVUPD %s, %s", a, cAddr(r, v))
			case masked:
				if !over {
					tmp := y(breg(0))
					g.i("VMASKMOVPD %s, %s, %s", cAddr(r, v), y(maskReg), tmp)
					g.i("VADDPD %s, %s, %s", tmp, a, a)
				}
				g.i("VMASKMOVPD %s, %s, %s", a, y(maskReg), cAddr(r, v))
			}
		}
	}
}

// nextBlock moves on to the next column block after a full block's store,
// and to the end after the last columns'.
func (k mm) nextBlock(g *asm, w int, md mode, pre string) {
	if md != full {
		g.i("JMP %s_end", k.name)
		return
	}
	g.i("ADDQ $%d, CX", 32*w)
	g.i("SUBQ $%d, BX", 4*w)
	g.i("JMP %s", pre)
}

func (k mm) next(w int) string {
	for i, x := range k.widths {
		if x == w && i+1 < len(k.widths) {
			return fmt.Sprintf("%s_w%d", k.name, k.widths[i+1])
		}
	}
	return k.name + "_shift"
}

func (k mm) emit(g *asm) {
	kind := "NN"
	if k.trans {
		kind = "TN"
	}
	g.raw(fmt.Sprintf("\n// func %s(k int, a *float64, lda int, b *float64, ldb int, c *float64, ldc int, n int, over int)\n", k.name))
	g.raw(fmt.Sprintf("// computes the %s product for %d rows of C, added to C or, when over ≠ 0, in its place.\n", kind, k.mr))
	g.raw(fmt.Sprintf("TEXT ·%s(SB), NOSPLIT, $0-72\n", k.name))
	g.i("MOVQ k+0(FP), DI")
	g.i("MOVQ lda+16(FP), R10")
	g.i("SHLQ $3, R10")
	g.i("MOVQ ldb+32(FP), R12")
	g.i("SHLQ $3, R12")
	g.i("MOVQ ldc+48(FP), DX")
	g.i("SHLQ $3, DX")
	g.i("MOVQ n+56(FP), BX")
	g.i("XORQ CX, CX")
	for _, w := range k.widths {
		k.block(g, w, full)
	}
	k.block(g, 1, shifted)
	k.block(g, 1, masked)
	g.label(k.name + "_end")
	g.i("VZEROUPPER")
	g.i("RET")
}

// nt describes one NT kernel: mr rows of C, blocks of 4 columns (rows of B),
// and sets independent accumulator sets along k.
type nt struct {
	name string
	mr   int
	sets int
}

func (k nt) acc(s, i, j, nr int) int { return s*k.mr*nr + i*nr + j }

func ntA(i int, disp int) string {
	switch i {
	case 0:
		return fmt.Sprintf("%d(R8)", disp)
	case 1:
		return fmt.Sprintf("%d(R8)(R10*1)", disp)
	default:
		return fmt.Sprintf("%d(R8)(R10*2)", disp)
	}
}

func ntB(j int, disp int) string {
	switch j {
	case 0:
		return fmt.Sprintf("%d(R11)", disp)
	case 1:
		return fmt.Sprintf("%d(R11)(R12*1)", disp)
	case 2:
		return fmt.Sprintf("%d(R11)(R12*2)", disp)
	default:
		return fmt.Sprintf("%d(R9)", disp)
	}
}

func ntC(i int, disp int) string {
	switch i {
	case 0:
		return fmt.Sprintf("%d(SI)", disp)
	case 1:
		return fmt.Sprintf("%d(SI)(DX*1)", disp)
	default:
		return fmt.Sprintf("%d(SI)(DX*2)", disp)
	}
}

func (k nt) step(g *asm, nr, set, disp int) {
	na := k.sets * k.mr * nr
	for i := 0; i < k.mr; i++ {
		g.i("VMOVUPD %s, %s", ntA(i, disp), y(na+i))
	}
	tmp := na + k.mr
	for j := 0; j < nr; j++ {
		if k.mr == 1 {
			g.i("VFMADD231PD %s, %s, %s", ntB(j, disp), y(na), y(k.acc(set, 0, j, nr)))
			continue
		}
		g.i("VMOVUPD %s, %s", ntB(j, disp), y(tmp))
		for i := 0; i < k.mr; i++ {
			g.i("VFMADD231PD %s, %s, %s", y(tmp), y(na+i), y(k.acc(set, i, j, nr)))
		}
	}
}

func (k nt) advance(g *asm, nr, bytes int) {
	g.i("ADDQ $%d, R8", bytes)
	g.i("ADDQ $%d, R11", bytes)
	if nr == 4 {
		g.i("ADDQ $%d, R9", bytes)
	}
}

func (k nt) block(g *asm, nr int) {
	pre := fmt.Sprintf("%s_nr%d", k.name, nr)
	g.label(pre)
	if nr == 4 {
		g.i("CMPQ BX, $4")
		g.i("JLT %s_tail", k.name)
	}
	if k.sets*k.mr*nr+k.mr+1 > 16 {
		log.Panicf("%s: too many registers for nr=%d", k.name, nr)
	}
	g.i("MOVQ a+8(FP), R8")
	g.i("MOVQ CX, R11")
	if nr == 4 {
		g.i("LEAQ (R11)(R12*2), R9")
		g.i("ADDQ R12, R9")
	}
	for s := 0; s < k.sets; s++ {
		for i := 0; i < k.mr; i++ {
			for j := 0; j < nr; j++ {
				r := y(k.acc(s, i, j, nr))
				g.i("VXORPD %s, %s, %s", r, r, r)
			}
		}
	}
	if k.sets == 2 {
		g.i("MOVQ DI, AX")
		g.i("SHRQ $3, AX")
		g.i("JEQ %s_one", pre)
		g.i("PCALIGN $32")
		g.label(pre + "_loop2")
		k.step(g, nr, 0, 0)
		k.step(g, nr, 1, 32)
		k.advance(g, nr, 64)
		g.i("DECQ AX")
		g.i("JNE %s_loop2", pre)
		g.label(pre + "_one")
		g.i("TESTQ $4, DI")
		g.i("JEQ %s_ktail", pre)
		k.step(g, nr, 0, 0)
		k.advance(g, nr, 32)
	} else {
		g.i("MOVQ DI, AX")
		g.i("SHRQ $2, AX")
		g.i("JEQ %s_ktail", pre)
		g.i("PCALIGN $32")
		g.label(pre + "_loop")
		k.step(g, nr, 0, 0)
		k.advance(g, nr, 32)
		g.i("DECQ AX")
		g.i("JNE %s_loop", pre)
	}
	// k tail: the last 1-3 elements of each dot product, by masked loads.
	g.label(pre + "_ktail")
	g.i("MOVQ DI, AX")
	g.i("ANDQ $3, AX")
	g.i("JEQ %s_reduce", pre)
	g.i("LEAQ maskTable<>+32(SB), R13")
	g.i("SHLQ $3, AX")
	g.i("SUBQ AX, R13")
	g.i("VMOVUPD (R13), %s", y(maskReg))
	ta, tb := 13, 14
	if k.sets*k.mr*nr > ta {
		log.Panicf("%s: k tail registers clash", k.name)
	}
	for i := 0; i < k.mr; i++ {
		g.i("VMASKMOVPD %s, %s, %s", ntA(i, 0), y(maskReg), y(ta))
		for j := 0; j < nr; j++ {
			g.i("VMASKMOVPD %s, %s, %s", ntB(j, 0), y(maskReg), y(tb))
			g.i("VFMADD231PD %s, %s, %s", y(tb), y(ta), y(k.acc(0, i, j, nr)))
		}
	}
	g.label(pre + "_reduce")
	for s := 1; s < k.sets; s++ {
		for i := 0; i < k.mr; i++ {
			for j := 0; j < nr; j++ {
				d := y(k.acc(0, i, j, nr))
				g.i("VADDPD %s, %s, %s", y(k.acc(s, i, j, nr)), d, d)
			}
		}
	}
	k.reduce(g, nr)
	if nr < 4 {
		g.i("JMP %s_end", k.name)
		return
	}
	g.i("ADDQ $32, SI")
	g.i("LEAQ (CX)(R12*4), CX")
	g.i("SUBQ $4, BX")
	g.i("JMP %s", pre)
}

// reduce emits the horizontal sums of set 0's accumulators into the nr
// columns of C (masked when nr < 4), one row at a time.
func (k nt) reduce(g *asm, nr int) {
	// Free registers after the accumulators of set 0.
	free := k.mr * nr
	t0, t1, t2, zero := free, free+1, free+2, free+3
	if nr < 4 {
		g.i("VXORPD %s, %s, %s", y(zero), y(zero), y(zero))
		g.i("LEAQ maskTable<>+%d(SB), R13", 32-8*nr)
		g.i("VMOVUPD (R13), %s", y(maskReg))
	}
	if nr < 4 && zero >= maskReg {
		log.Panicf("%s: reduction registers clash", k.name)
	}
	for i := 0; i < k.mr; i++ {
		a := func(j int) string {
			if j < nr {
				return y(k.acc(0, i, j, nr))
			}
			return y(zero)
		}
		g.i("VHADDPD %s, %s, %s", a(1), a(0), y(t0))
		g.i("VHADDPD %s, %s, %s", a(3), a(2), y(t1))
		g.i("VPERM2F128 $0x21, %s, %s, %s", y(t1), y(t0), y(t2))
		g.i("VBLENDPD $0x0C, %s, %s, %s", y(t1), y(t0), y(t0))
		g.i("VADDPD %s, %s, %s", y(t2), y(t0), y(t0))
		if nr == 4 {
			g.i("VADDPD %s, %s, %s", ntC(i, 0), y(t0), y(t0))
			g.i("VMOVUPD %s, %s", y(t0), ntC(i, 0))
		} else {
			g.i("VMASKMOVPD %s, %s, %s", ntC(i, 0), y(maskReg), y(t1))
			g.i("VADDPD %s, %s, %s", y(t1), y(t0), y(t0))
			g.i("VMASKMOVPD %s, %s, %s", y(t0), y(maskReg), ntC(i, 0))
		}
	}
}

func (k nt) emit(g *asm) {
	g.raw(fmt.Sprintf("\n// func %s(k int, a *float64, lda int, b *float64, ldb int, c *float64, ldc int, n int)\n", k.name))
	g.raw(fmt.Sprintf("// computes the NT product for %d rows of C by dot products.\n", k.mr))
	g.raw(fmt.Sprintf("TEXT ·%s(SB), NOSPLIT, $0-64\n", k.name))
	g.i("MOVQ k+0(FP), DI")
	g.i("MOVQ lda+16(FP), R10")
	g.i("SHLQ $3, R10")
	g.i("MOVQ b+24(FP), CX")
	g.i("MOVQ ldb+32(FP), R12")
	g.i("SHLQ $3, R12")
	g.i("MOVQ c+40(FP), SI")
	g.i("MOVQ ldc+48(FP), DX")
	g.i("SHLQ $3, DX")
	g.i("MOVQ n+56(FP), BX")
	k.block(g, 4)
	g.label(k.name + "_tail")
	g.i("CMPQ BX, $3")
	g.i("JEQ %s_nr3", k.name)
	g.i("CMPQ BX, $2")
	g.i("JEQ %s_nr2", k.name)
	g.i("CMPQ BX, $1")
	g.i("JEQ %s_nr1", k.name)
	g.i("JMP %s_end", k.name)
	for _, nr := range []int{3, 2, 1} {
		k.block(g, nr)
	}
	g.label(k.name + "_end")
	g.i("VZEROUPPER")
	g.i("RET")
}

const vectorKernels = `
// func axpyKernel(alpha float64, x, y *float64, n int)
// computes y += alpha·x for n > 0 elements.
TEXT ·axpyKernel(SB), NOSPLIT, $0-32
	VBROADCASTSD alpha+0(FP), Y0
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	MOVQ n+24(FP), BX
	MOVQ BX, AX
	SHRQ $4, AX
	JEQ axpy_v4
	PCALIGN $32
axpy_loop16:
	VMOVUPD (DI), Y1
	VMOVUPD 32(DI), Y2
	VMOVUPD 64(DI), Y3
	VMOVUPD 96(DI), Y4
	VFMADD231PD (SI), Y0, Y1
	VFMADD231PD 32(SI), Y0, Y2
	VFMADD231PD 64(SI), Y0, Y3
	VFMADD231PD 96(SI), Y0, Y4
	VMOVUPD Y1, (DI)
	VMOVUPD Y2, 32(DI)
	VMOVUPD Y3, 64(DI)
	VMOVUPD Y4, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ AX
	JNE axpy_loop16
axpy_v4:
	MOVQ BX, AX
	ANDQ $15, AX
	SHRQ $2, AX
	JEQ axpy_s
axpy_loop4:
	VMOVUPD (DI), Y1
	VFMADD231PD (SI), Y0, Y1
	VMOVUPD Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ AX
	JNE axpy_loop4
axpy_s:
	ANDQ $3, BX
	JEQ axpy_end
axpy_loop1:
	VMOVSD (DI), X1
	VFMADD231SD (SI), X0, X1
	VMOVSD X1, (DI)
	ADDQ $8, SI
	ADDQ $8, DI
	DECQ BX
	JNE axpy_loop1
axpy_end:
	VZEROUPPER
	RET

// func dotKernel(x, y *float64, n int) float64
// returns x·y for n > 0 elements.
TEXT ·dotKernel(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ n+16(FP), BX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	MOVQ BX, AX
	SHRQ $4, AX
	JEQ dot_v4
	PCALIGN $32
dot_loop16:
	VMOVUPD (SI), Y4
	VMOVUPD 32(SI), Y5
	VMOVUPD 64(SI), Y6
	VMOVUPD 96(SI), Y7
	VFMADD231PD (DI), Y4, Y0
	VFMADD231PD 32(DI), Y5, Y1
	VFMADD231PD 64(DI), Y6, Y2
	VFMADD231PD 96(DI), Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ AX
	JNE dot_loop16
dot_v4:
	MOVQ BX, AX
	ANDQ $15, AX
	SHRQ $2, AX
	JEQ dot_reduce
dot_loop4:
	VMOVUPD (SI), Y4
	VFMADD231PD (DI), Y4, Y0
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ AX
	JNE dot_loop4
dot_reduce:
	VADDPD Y1, Y0, Y0
	VADDPD Y3, Y2, Y2
	VADDPD Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VHADDPD X0, X0, X0
	ANDQ $3, BX
	JEQ dot_end
dot_loop1:
	VMOVSD (SI), X4
	VFMADD231SD (DI), X4, X0
	ADDQ $8, SI
	ADDQ $8, DI
	DECQ BX
	JNE dot_loop1
dot_end:
	VMOVSD X0, ret+24(FP)
	VZEROUPPER
	RET
`

const header = `// Code generated by kernels_gen.go; DO NOT EDIT.

//go:build !purego

#include "textflag.h"

// maskTable holds four set lanes, four clear lanes and four set lanes: the
// 32 bytes at maskTable+32-8·r select the first r lanes of a vector, and those
// at maskTable+32+8·r the last r lanes.
DATA maskTable<>+0(SB)/8, $-1
DATA maskTable<>+8(SB)/8, $-1
DATA maskTable<>+16(SB)/8, $-1
DATA maskTable<>+24(SB)/8, $-1
DATA maskTable<>+32(SB)/8, $0
DATA maskTable<>+40(SB)/8, $0
DATA maskTable<>+48(SB)/8, $0
DATA maskTable<>+56(SB)/8, $0
DATA maskTable<>+64(SB)/8, $-1
DATA maskTable<>+72(SB)/8, $-1
DATA maskTable<>+80(SB)/8, $-1
DATA maskTable<>+88(SB)/8, $-1
GLOBL maskTable<>(SB), RODATA|NOPTR, $96
`

func main() {
	out := flag.String("out", "kernels_amd64.s", "output file")
	flag.Parse()
	var g asm
	g.raw(header)
	for _, trans := range []bool{false, true} {
		prefix := "nn"
		if trans {
			prefix = "tn"
		}
		// Each row count gets the widest block that fits in 16 ymm
		// registers with enough independent accumulators (8-12) to hide
		// the 4-cycle FMA latency: 1×32 (B read by the FMAs), 2×16, 3×12,
		// 4×12, 5×8 and 6×8, the main kernel.
		for _, k := range []mm{
			{mr: 1, widths: []int{8, 2, 1}},
			{mr: 2, widths: []int{4, 2, 1}},
			{mr: 3, widths: []int{3, 2, 1}},
			{mr: 4, widths: []int{3, 2, 1}},
			{mr: 5, widths: []int{2, 1}},
			{mr: 6, widths: []int{2, 1}},
		} {
			k.trans = trans
			k.name = fmt.Sprintf("%sKernel%d", prefix, k.mr)
			k.emit(&g)
		}
	}
	// 3×4 dot products use 12 accumulators; a single row alternates two
	// sets of 4 along k instead.
	for _, k := range []nt{
		{mr: 1, sets: 2},
		{mr: 2, sets: 1},
		{mr: 3, sets: 1},
	} {
		k.name = fmt.Sprintf("ntKernel%d", k.mr)
		k.emit(&g)
	}
	g.raw(vectorKernels)
	if err := os.WriteFile(*out, g.b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}
