package config

import "strings"

// editDistance is the Levenshtein distance between a and b, by bytes.
// Inputs are short key names; callers bound their length.
func editDistance(a, b string) int {
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

// maxSuggestInput bounds the length of a name we compute suggestions for.
const maxSuggestInput = 128

// nearestKey returns the known key closest to an unknown one, or "" when
// nothing is close. A key written without its section ("privileged")
// matches on the last segment ("sandbox.privileged").
func nearestKey(unknown string, known []string) string {
	if len(unknown) > maxSuggestInput {
		return ""
	}
	u := strings.ToLower(unknown)
	best, bestDist := "", 1<<30
	for _, k := range known {
		d := editDistance(u, k)
		if !strings.Contains(u, ".") {
			if i := strings.LastIndexByte(k, '.'); i >= 0 {
				d = min(d, editDistance(u, k[i+1:]))
			}
		}
		if d < bestDist {
			best, bestDist = k, d
		}
	}
	if bestDist > max(2, len(u)/3) {
		return ""
	}
	return best
}

// didYouMean formats a suggestion for an error message.
func didYouMean(unknown string, known []string) string {
	if s := nearestKey(unknown, known); s != "" {
		return "; did you mean " + s + "?"
	}
	return ""
}
