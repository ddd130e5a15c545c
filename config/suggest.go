package config

import "strings"

// nearestKey returns the accepted key closest to an unknown one, when it
// is close enough to be a typo of it ("lisen" for listen, "maxConnections"
// or "max-connections" for max_connections), else "". Keys are compared
// in lower case without '_' and '-', by the number of letters inserted,
// removed, changed or swapped with their neighbour; a key differing in
// more than a third of its letters (at least one) suggests nothing.
func nearestKey(unknown string, accepted []string) string {
	u := foldKey(unknown)
	best, bestDist := "", -1
	for _, a := range accepted {
		d := editDistance(u, foldKey(a))
		if d > max(1, len(u)/3) || d >= max(len(u), 1) {
			continue
		}
		if bestDist < 0 || d < bestDist {
			best, bestDist = a, d
		}
	}
	return best
}

func foldKey(k string) string {
	return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(k))
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of adjacent letters.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
