// Package crc32c is CRC-32C (Castagnoli) as BookKeeper's CRC32C digest and
// S3's x-amz-checksum-crc32c use it, with the algebra that lets a CRC be
// put together from the CRCs of its pieces instead of hashing the bytes
// again: Combine (the CRC of A||B from those of A and B) and Suffix (the
// CRC of B from those of A||B and A).
//
// A CRC is linear over GF(2): crc(A||B) = crc(A)·x^(8·len(B)) mod P ⊕
// crc(B), with the pre- and post-conditioning of the standard CRC
// cancelling out (the identity zlib documents for crc32_combine). Shifting
// by n bytes multiplies by x^(8n) mod P, built from a table of
// x^(2^k) mod P: at most one 32-step multiplication per set bit of n, so a
// combine costs about as much as hashing a few hundred bytes. Worth it for
// large pieces only (see MinCombine).
package crc32c

import "hash/crc32"

// Table is hash/crc32's Castagnoli table (the CPU's CRC32 instructions
// where there are some).
var Table = crc32.MakeTable(crc32.Castagnoli)

// MinCombine is the piece size from which Combine and Suffix cost less
// than hashing the piece again (a combine is ≈ 0.5 µs; hashing 64 KiB with
// SSE4.2 ≈ 5 µs).
const MinCombine = 64 << 10

// poly is the reflected Castagnoli polynomial.
const poly = 0x82F63B78

// x2n[k] is x^(2^k) mod P (reflected), for shifts by up to 2^66 bits.
var x2n = func() (t [67]uint32) {
	p := uint32(1) << 30 // x^1
	for k := range t {
		t[k] = p
		p = multModP(p, p)
	}
	return t
}()

// Checksum is the CRC-32C of b.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, Table) }

// Update adds b to crc (the CRC-32C of what came before).
func Update(crc uint32, b []byte) uint32 { return crc32.Update(crc, Table, b) }

// Combine returns the CRC-32C of A||B from crcA, crcB and len(B).
func Combine(crcA, crcB uint32, lenB int64) uint32 { return shift(crcA, lenB) ^ crcB }

// Suffix returns the CRC-32C of B from that of A||B, crcA and len(B): the
// inverse of Combine.
func Suffix(crcAB, crcA uint32, lenB int64) uint32 { return crcAB ^ shift(crcA, lenB) }

// shift multiplies crc by x^(8n) mod P.
func shift(crc uint32, n int64) uint32 {
	if n <= 0 {
		return crc
	}
	p := uint32(1) << 31 // x^0
	for k := 3; n != 0; k, n = k+1, n>>1 {
		if n&1 != 0 {
			p = multModP(x2n[k], p)
		}
	}
	return multModP(p, crc)
}

// multModP is a·b mod P, both reflected (bit 31 is x^0).
func multModP(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				break
			}
		}
		if b&1 != 0 {
			b = b>>1 ^ poly
		} else {
			b >>= 1
		}
	}
	return p
}
