//go:build !purego

#include "textflag.h"

// func specialBlocks(p []byte) int
//
// Returns the index of the first byte of p that is '"', '\\', below 0x20 or
// at least 0x80, looking only at p's whole 16-byte blocks; if none of them
// holds one, the length of those blocks (len(p) rounded down to 16).
// SSE2 only, which every amd64 processor has.
TEXT ·specialBlocks(SB), NOSPLIT, $0-32
	MOVQ p_base+0(FP), SI
	MOVQ p_len+8(FP), CX
	ANDQ $~15, CX
	XORQ AX, AX

	// X5: 0x1f in every byte; X6: '"'; X7: '\\'.
	MOVQ $0x1f1f1f1f1f1f1f1f, DX
	MOVQ DX, X5
	PUNPCKLQDQ X5, X5
	MOVQ $0x2222222222222222, DX
	MOVQ DX, X6
	PUNPCKLQDQ X6, X6
	MOVQ $0x5c5c5c5c5c5c5c5c, DX
	MOVQ DX, X7
	PUNPCKLQDQ X7, X7

	// Two blocks per step while 32 bytes are left.
	MOVQ CX, BX
	ANDQ $~31, BX

pair:
	CMPQ AX, BX
	JAE  single
	MOVOU (SI)(AX*1), X0
	MOVOU 16(SI)(AX*1), X8
	MOVO  X0, X1
	MOVO  X0, X2
	MOVO  X8, X9
	MOVO  X8, X10
	PCMPGTB X5, X0  // X0: 0xff where 0x20 <= byte <= 0x7f (signed compare)
	PCMPEQB X6, X1  // X1: 0xff where byte == '"'
	PCMPEQB X7, X2  // X2: 0xff where byte == '\\'
	POR     X2, X1
	PANDN   X0, X1  // X1 = X0 &^ X1: 0xff where the byte needs no look
	PCMPGTB X5, X8
	PCMPEQB X6, X9
	PCMPEQB X7, X10
	POR     X10, X9
	PANDN   X8, X9
	PAND    X1, X9
	PMOVMSKB X9, DX
	CMPL DX, $0xffff
	JNE  pairfound
	ADDQ $32, AX
	JMP  pair

pairfound:
	PMOVMSKB X1, DX
	XORL $0xffff, DX
	JNZ  found
	ADDQ $16, AX
	JMP  single

single:
	CMPQ AX, CX
	JAE  done
	MOVOU (SI)(AX*1), X0
	MOVO  X0, X1
	MOVO  X0, X2
	PCMPGTB X5, X0
	PCMPEQB X6, X1
	PCMPEQB X7, X2
	POR     X2, X1
	PANDN   X0, X1
	PMOVMSKB X1, DX
	XORL $0xffff, DX
	JNZ  found
	ADDQ $16, AX
	JMP  single

found:
	BSFL DX, DX
	ADDQ DX, AX

done:
	MOVQ AX, ret+24(FP)
	RET
