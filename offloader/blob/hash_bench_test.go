package blob_test

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/md5"
	"crypto/sha256"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob/blobtest"
)

// BenchmarkPartHash is the cost of one pass of each part checksum over an
// 8 MiB part (MB/s and CPU seconds per GiB), the terms that the upload
// benchmarks of s3 and cos add up: MD5 (Content-MD5), SHA-256 (a signed
// SigV4 payload), CRC-32C (x-amz-checksum-crc32c, CPU instructions) and
// CRC-64/ECMA (x-cos-hash-crc64ecma, tables).
func BenchmarkPartHash(b *testing.B) {
	part := make([]byte, 8<<20)
	for i := range part {
		part[i] = byte(i * 7)
	}
	for _, h := range []struct {
		name string
		new  func() hash.Hash
	}{
		{"md5", md5.New},
		{"sha256", sha256.New},
		{"crc32c", func() hash.Hash { return crc32.New(crc32.MakeTable(crc32.Castagnoli)) }},
		{"crc64ecma", func() hash.Hash { return crc64.New(crc64.MakeTable(crc64.ECMA)) }},
	} {
		b.Run(h.name, func(b *testing.B) {
			b.SetBytes(int64(len(part)))
			start := blobtest.CPUSeconds(b)
			for i := 0; i < b.N; i++ {
				d := h.new()
				d.Write(part)
				d.Sum(nil)
			}
			b.ReportMetric((blobtest.CPUSeconds(b)-start)/(float64(b.N)*float64(len(part))/(1<<30)), "cpu-s/GiB")
		})
	}
}

// BenchmarkTLSRecordSeal is what encrypting a part costs a client of
// TLS with AES-128-GCM (the suite Go negotiates on CPUs with AES
// instructions): the part sealed in 16 KiB records, the most TLS allows.
// "seal" encrypts each record from the part into an output buffer, as
// crypto/tls does for TLS 1.2; "copy+seal" first copies the record's
// plaintext into that buffer and seals it in place, as crypto/tls does for
// TLS 1.3 (the record's content type follows the plaintext). An operation
// is 1 GiB, 16 passes over a 64 MiB part: like a part that waited in
// memory while its block filled, the plaintext is not in the cache. No
// copy through Go's TLS spends less than "copy+seal" per GiB.
// "seal-cached" seals one 16 KiB record over and over, from the cache: the
// cipher's own speed.
func BenchmarkTLSRecordSeal(b *testing.B) {
	const record = 16 << 10
	part := make([]byte, 64<<20)
	for i := range part {
		part[i] = byte(i * 7)
	}
	block, err := aes.NewCipher(make([]byte, 16))
	if err != nil {
		b.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		b.Fatal(err)
	}
	nonce := make([]byte, aead.NonceSize())
	out := make([]byte, 0, record+1+aead.Overhead())
	for _, c := range []struct {
		name      string
		copyFirst bool
		span      int // bytes of the part sealed over and over
	}{
		{"seal", false, len(part)},
		{"copy+seal", true, len(part)},
		{"seal-cached", false, record},
	} {
		copyFirst := c.copyFirst
		span := part[:c.span]
		b.Run(c.name, func(b *testing.B) {
			const gib = 1 << 30 // an operation
			passes := gib / len(span)
			b.SetBytes(gib)
			start := blobtest.CPUSeconds(b)
			for i := 0; i < b.N*passes; i++ {
				for off := 0; off < len(span); off += record {
					p := span[off : off+record]
					if copyFirst {
						rec := append(append(out[:0], p...), 23)
						out = aead.Seal(rec[:0], nonce, rec, nil)
					} else {
						out = aead.Seal(out[:0], nonce, p, nil)
					}
				}
			}
			b.ReportMetric((blobtest.CPUSeconds(b)-start)/float64(b.N), "cpu-s/GiB")
		})
	}
}
