//go:build !purego

#include "textflag.h"

// Offsets of the constants in geluTable, 32 bytes each.
#define K_C      0
#define K_A      32
#define K_ABS    64
#define K_SIGN   96
#define K_CLAMP  128
#define K_2LOG2E 160
#define K_MAGIC  192
#define K_LN2HI  224
#define K_LN2LO  256
#define K_P0     288
#define K_P1     320
#define K_P2     352
#define K_P3     384
#define K_P4     416
#define K_P5     448
#define K_P6     480
#define K_P7     512
#define K_P8     544
#define K_P9     576
#define K_P10    608
#define K_P11    640
#define K_BIAS   672
#define K_TP0    704
#define K_TP1    736
#define K_TP2    768
#define K_TQ0    800
#define K_TQ1    832
#define K_TQ2    864
#define K_SPLIT  896
#define K_ONE    928
#define K_MTWO   960
#define K_HALF   992
#define K_MMAX   1024

// The kernel works on blocks of up to 8 vectors of 4 lanes, in three passes
// over each block that hand their results on through a buffer in the frame,
// 160 bytes per vector:
#define B_A      0   // a, then A
#define B_N      32  // N
#define B_D      64  // Q, then D
#define B_KF     96  // k + 1.5·2^52
#define B_R      128 // r
#define B_VEC    160
#define BLOCK    8

// func geluKernel(y, t, x *float64, n int, k *[4]uint64)
//
// n is a positive multiple of 4 and k points at geluTable. The kernel
// performs the operations of geluGeneric in the same order, four lanes at a
// time, without FMA. One vector takes a chain of about 100 cycles of
// latency, longer than the out-of-order window can hide; cutting it into
// three passes over a block of independent vectors (u to r, r to the
// selected A, N and D, and the division to y) makes the kernel about 1.3
// times faster than a single loop.
//
// In Go's operand order VSUBPD b, a, d computes d = a − b, VMINPD and VMAXPD
// return their first operand when a lane holds a NaN, and VBLENDVPD m, b, a, d
// takes b where m is set and a elsewhere.
TEXT ·geluKernel(SB), $1312-40 // BLOCK·B_VEC bytes of buffer, and 32 to align it
	MOVQ y+0(FP), DI
	MOVQ t+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ k+32(FP), AX
	MOVQ SP, R11             // the buffer, aligned to 32 bytes
	ADDQ $31, R11
	ANDQ $-32, R11
	VMOVUPD K_CLAMP(AX), Y14
	VMOVUPD K_MMAX(AX), Y15
	SHRQ $2, CX              // vectors left

gelu_block:
	MOVQ CX, R8              // vectors in this block
	CMPQ R8, $BLOCK
	JLE gelu_pass1
	MOVQ $BLOCK, R8

	// Pass 1: u, a = min(|u|, 20), Cephes's N and Q, and k and r of e^{2a}.
gelu_pass1:
	MOVQ R8, R9
	MOVQ SI, R10
	MOVQ R11, BX

gelu_loop1:
	VMOVUPD (R10), Y0        // x
	VMULPD K_A(AX), Y0, Y1   // geluA·x
	VMULPD Y0, Y1, Y1        // ·x
	VMULPD Y0, Y1, Y1        // ·x
	VADDPD Y1, Y0, Y1        // x + geluA·x³
	VMULPD K_C(AX), Y1, Y1   // u
	VANDPD K_ABS(AX), Y1, Y3
	VMINPD Y3, Y14, Y3       // a = min(|u|, 20), NaN stays
	VMOVUPD Y3, B_A(BX)

	VMULPD Y3, Y3, Y9        // w = a²
	VMULPD K_TP0(AX), Y9, Y10
	VADDPD K_TP1(AX), Y10, Y10
	VMULPD Y9, Y10, Y10
	VADDPD K_TP2(AX), Y10, Y10 // P
	VADDPD K_TQ0(AX), Y9, Y11
	VMULPD Y9, Y11, Y11
	VADDPD K_TQ1(AX), Y11, Y11
	VMULPD Y9, Y11, Y11
	VADDPD K_TQ2(AX), Y11, Y11 // Q
	VMOVUPD Y11, B_D(BX)
	VMULPD Y3, Y9, Y9        // a·w
	VMULPD Y10, Y9, Y9       // N = a·w·P
	VMOVUPD Y9, B_N(BX)

	VMULPD K_2LOG2E(AX), Y3, Y5
	VADDPD K_MAGIC(AX), Y5, Y5 // kf = k + 1.5·2^52
	VMOVUPD Y5, B_KF(BX)
	VADDPD Y3, Y3, Y1        // z = 2a
	VSUBPD K_MAGIC(AX), Y5, Y6 // k
	VMULPD K_LN2HI(AX), Y6, Y7
	VMULPD K_LN2LO(AX), Y6, Y6
	VSUBPD Y7, Y1, Y1
	VSUBPD Y6, Y1, Y1        // r
	VMOVUPD Y1, B_R(BX)

	ADDQ $32, R10
	ADDQ $B_VEC, BX
	DECQ R9
	JNE gelu_loop1

	// Pass 2: e^{2a} + 1 = 2^k + 2^k·q + 1, and the choice of (A, N, D).
	MOVQ R8, R9
	MOVQ R11, BX

gelu_loop2:
	VMOVUPD B_R(BX), Y1      // r
	VMULPD Y1, Y1, Y4        // r²
	VMULPD Y4, Y4, Y7        // r⁴
	VMULPD Y7, Y4, Y6        // r⁶
	VMULPD K_P1(AX), Y1, Y8
	VADDPD K_P0(AX), Y8, Y8  // p01
	VMULPD K_P3(AX), Y1, Y10
	VADDPD K_P2(AX), Y10, Y10 // p23
	VMULPD K_P5(AX), Y1, Y12
	VADDPD K_P4(AX), Y12, Y12 // p45
	VMULPD K_P7(AX), Y1, Y13
	VADDPD K_P6(AX), Y13, Y13 // p67
	VMULPD Y4, Y10, Y10
	VADDPD Y10, Y8, Y8       // p03
	VMULPD Y4, Y13, Y13
	VADDPD Y13, Y12, Y12     // p47
	VMULPD K_P9(AX), Y1, Y10
	VADDPD K_P8(AX), Y10, Y10 // p89
	VMULPD K_P11(AX), Y1, Y13
	VADDPD K_P10(AX), Y13, Y13 // pab
	VMULPD Y4, Y13, Y13
	VADDPD Y13, Y10, Y10     // p8b
	VMULPD Y10, Y7, Y10      // r⁴·p8b
	VADDPD Y10, Y12, Y10     // p47 + r⁴·p8b
	VMULPD Y10, Y6, Y10      // r⁶·(p47 + r⁴·p8b)
	VMULPD Y8, Y4, Y8        // r²·p03
	VADDPD Y8, Y1, Y8        // r + r²·p03
	VADDPD Y10, Y8, Y8       // q
	VMOVUPD B_KF(BX), Y5
	VPSLLQ $52, Y5, Y5
	VPADDQ K_BIAS(AX), Y5, Y5 // s = 2^k
	VMULPD Y8, Y5, Y8        // s·q
	VADDPD K_ONE(AX), Y5, Y5 // s + 1
	VADDPD Y8, Y5, Y8        // e^{2a} + 1

	// Y12 is set where a ≥ 0.625 or a is NaN; there (A, N, D) becomes
	// (1, −2, e^{2a} + 1), and elsewhere it stays (a, N, Q).
	VMOVUPD B_A(BX), Y3
	VCMPPD $5, K_SPLIT(AX), Y3, Y12 // not less than, or unordered
	VBLENDVPD Y12, K_ONE(AX), Y3, Y3
	VMOVUPD Y3, B_A(BX)
	VMOVUPD B_N(BX), Y9
	VBLENDVPD Y12, K_MTWO(AX), Y9, Y9
	VMOVUPD Y9, B_N(BX)
	VMOVUPD B_D(BX), Y11
	VBLENDVPD Y12, Y8, Y11, Y11
	VMOVUPD Y11, B_D(BX)

	ADDQ $B_VEC, BX
	DECQ R9
	JNE gelu_loop2

	// Pass 3: T = A + N/D, t = T with the sign of x, and y = h·(1 + t).
	MOVQ R8, R9
	MOVQ R11, BX

gelu_loop3:
	VMOVUPD B_N(BX), Y9
	VDIVPD B_D(BX), Y9, Y9
	VADDPD B_A(BX), Y9, Y3   // T
	VMOVUPD (SI), Y0         // x
	VANDPD K_SIGN(AX), Y0, Y2
	VORPD Y2, Y3, Y3         // t
	VMOVUPD Y3, (DX)
	VMULPD K_HALF(AX), Y0, Y0
	VMAXPD Y0, Y15, Y0       // h = max(x/2, −MaxFloat64), NaN stays
	VADDPD K_ONE(AX), Y3, Y3
	VMULPD Y3, Y0, Y0        // y = h·(1 + t)
	VMOVUPD Y0, (DI)

	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	ADDQ $B_VEC, BX
	DECQ R9
	JNE gelu_loop3

	SUBQ R8, CX
	JNE gelu_block
	VZEROUPPER
	RET
