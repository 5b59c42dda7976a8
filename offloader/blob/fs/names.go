package fs

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// How keys, objects and uploads are named on disk.

// encodeName maps a key to its file name in objects/.
func encodeName(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '/' || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	name := b.String()
	switch {
	case name == ".":
		return "%2E"
	case name == "..":
		return "%2E%2E"
	case len(name) > 200:
		h := sha256.Sum256([]byte(key))
		return "%h" + hex.EncodeToString(h[:])
	}
	return name
}

// decodeName reverses encodeName; ok is false for hashed names (the key is
// in the record) and for names that are not ours.
func decodeName(name string) (key string, ok bool) {
	if strings.HasPrefix(name, "%h") {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] != '%' {
			b.WriteByte(name[i])
			continue
		}
		if i+2 >= len(name) {
			return "", false
		}
		v, err := strconv.ParseUint(name[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), true
}

func (s *Store) recordPath(key string) string {
	return filepath.Join(s.dir, "objects", encodeName(key))
}

func (s *Store) dataPath(gen string) string { return filepath.Join(s.dir, "data", gen) }

func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

func isHexID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func (s *Store) uploadDir(id string) string { return filepath.Join(s.dir, "uploads", id) }

func partName(n int) string { return fmt.Sprintf("part-%05d", n) }

// parsePartName returns the part number of a file named by partName: only
// that exact spelling counts ("part-1", "part-+0001" or "part-00000" are
// not parts), so no stray file can stand in for a part.
func parsePartName(name string) (int, bool) {
	num, ok := strings.CutPrefix(name, "part-")
	if !ok || len(num) != 5 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(num); i++ {
		if num[i] < '0' || num[i] > '9' {
			return 0, false
		}
		n = n*10 + int(num[i]-'0')
	}
	if blob.CheckPartNumber(n) != nil {
		return 0, false
	}
	return n, true
}
