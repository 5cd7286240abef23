//go:build !purego

#include "textflag.h"

// func adamKernel(p, grad, m, v *float64, n int, k *AdamConsts)
// n is a positive multiple of 4. The same operations in the same order as
// adamGeneric, four lanes at a time, without FMA.
TEXT ·adamKernel(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ m+16(FP), R8
	MOVQ v+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ k+40(FP), AX
	VBROADCASTSD 0(AX), Y8   // Clip
	VBROADCASTSD 8(AX), Y9   // Beta1
	VBROADCASTSD 16(AX), Y10 // OneMinusBeta1
	VBROADCASTSD 24(AX), Y11 // Beta2
	VBROADCASTSD 32(AX), Y12 // OneMinusBeta2
	VBROADCASTSD 40(AX), Y13 // Step
	VBROADCASTSD 48(AX), Y14 // InvSqrtBC2
	VBROADCASTSD 56(AX), Y15 // Eps
	VXORPD Y7, Y7, Y7        // zero
	SHRQ $2, CX

adam_loop:
	VMOVUPD (SI), Y0
	VMULPD Y8, Y0, Y0        // g' = g·Clip
	VMOVUPD (R8), Y1
	VMULPD Y9, Y1, Y1        // Beta1·m
	VMULPD Y10, Y0, Y2       // (1−Beta1)·g'
	VADDPD Y2, Y1, Y1        // m
	VMOVUPD Y1, (R8)
	VMOVUPD (R9), Y3
	VMULPD Y11, Y3, Y3       // Beta2·v
	VMULPD Y0, Y0, Y4        // g'·g'
	VMULPD Y12, Y4, Y4       // (1−Beta2)·g'²
	VADDPD Y4, Y3, Y3        // v
	VMOVUPD Y3, (R9)
	VSQRTPD Y3, Y5
	VMULPD Y14, Y5, Y5       // √v·InvSqrtBC2
	VADDPD Y15, Y5, Y5       // + Eps
	VMULPD Y13, Y1, Y6       // Step·m
	VDIVPD Y5, Y6, Y6        // Step·m / den
	VMOVUPD (DI), Y2
	VBROADCASTSD 64(AX), Y4  // Decay
	VMULPD Y4, Y2, Y4        // Decay·p
	VADDPD Y4, Y6, Y6
	VSUBPD Y6, Y2, Y2
	VMOVUPD Y2, (DI)
	VMOVUPD Y7, (SI)         // clear g
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	DECQ CX
	JNE adam_loop
	VZEROUPPER
	RET
