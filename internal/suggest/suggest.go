// Package suggest finds the known name closest to a mistyped one, for
// "unknown key … (did you mean …?)" errors: the one edit distance of the
// repository (offloader's strict YAML config, bookieagent's bookkeeper.conf
// check).
package suggest

// Distance is the Levenshtein distance of a and b (byte-wise).
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Closest returns the candidate nearest to word and its distance, the
// first of equals in candidates' order; ("", -1) without candidates.
func Closest(word string, candidates ...[]string) (string, int) {
	best, bestD := "", -1
	for _, set := range candidates {
		for _, c := range set {
			if d := Distance(word, c); bestD < 0 || d < bestD {
				best, bestD = c, d
			}
		}
	}
	return best, bestD
}
