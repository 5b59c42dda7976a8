package cos

import "hash/crc64"

// ecmaReflected is the reflected ECMA-182 polynomial of CRC-64/XZ, the
// algorithm of x-cos-hash-crc64ecma.
const ecmaReflected = 0xC96C5795D7870F42

var crcTable = crc64.MakeTable(crc64.ECMA)

// crc64Combine returns the CRC of A||B from crc(A), crc(B) and len(B),
// by applying len(B) zero bits to crc(A) with GF(2) matrix squaring (the
// method zlib documents for crc32_combine), so the whole-object CRC of a
// multipart upload is known without re-reading the parts.
func crc64Combine(crcA, crcB uint64, lenB int64) uint64 {
	if lenB <= 0 {
		return crcA
	}
	var odd, even [64]uint64
	// odd: the operator for one zero bit.
	odd[0] = ecmaReflected
	for i, row := 1, uint64(1); i < 64; i, row = i+1, row<<1 {
		odd[i] = row
	}
	square(&even, &odd) // two zero bits
	square(&odd, &even) // four zero bits
	// Apply lenB zero bytes: the first square below gives one byte.
	for {
		square(&even, &odd)
		if lenB&1 != 0 {
			crcA = times(&even, crcA)
		}
		if lenB >>= 1; lenB == 0 {
			break
		}
		square(&odd, &even)
		if lenB&1 != 0 {
			crcA = times(&odd, crcA)
		}
		if lenB >>= 1; lenB == 0 {
			break
		}
	}
	return crcA ^ crcB
}

func times(m *[64]uint64, v uint64) uint64 {
	var sum uint64
	for i := 0; v != 0; i, v = i+1, v>>1 {
		if v&1 != 0 {
			sum ^= m[i]
		}
	}
	return sum
}

func square(dst, m *[64]uint64) {
	for i := range dst {
		dst[i] = times(m, m[i])
	}
}
