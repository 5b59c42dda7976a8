package blob_test

import (
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
