package verbs

import (
	"strconv"
	"strings"
)

// The unified diff fs.edit returns: lines compared whole (their endings
// included), a shortest edit script found by Myers' O(ND) algorithm in
// linear space (the middle-snake bisection), and hunks with diffContext
// lines of context, in the format of `diff -u` (a last line without a
// newline is marked "\ No newline at end of file"). Only the part of the
// texts between their longest common prefix and suffix of whole lines is
// compared, so the cost of a small edit does not grow with the file.

const diffContext = 3

// unifiedDiff returns the diff that turns old into new under the headers
// "--- a/name" and "+++ b/name"; "" when the texts are equal.
func unifiedDiff(name, old, new string) string {
	if old == new {
		return ""
	}
	pre := commonPrefixLines(old, new)
	suf := commonSuffixLines(old[pre:], new[pre:])
	// The compared lines: up to diffContext lines on each side of the
	// middle, for context, then the middle itself.
	before := lastLinesOf(old[:pre], diffContext)
	after := firstLinesOf(old[len(old)-suf:], diffContext)
	offset := strings.Count(old[:pre-len(before)], "\n") // lines of old and new before the compared part
	a := splitKeep(before + old[pre:len(old)-suf] + after)
	b := splitKeep(before + new[pre:len(new)-suf] + after)
	ops := diffLines(a, b)
	var sb strings.Builder
	sb.WriteString("--- a/" + name + "\n+++ b/" + name + "\n")
	for _, h := range hunks(ops, diffContext) {
		writeHunk(&sb, ops[h[0]:h[1]], offset)
	}
	return sb.String()
}

// commonPrefixLines is the length of the longest common prefix of a and b
// that ends at a line boundary in both.
func commonPrefixLines(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i+diffStride <= n && a[i:i+diffStride] == b[i:i+diffStride] {
		i += diffStride
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return strings.LastIndexByte(a[:i], '\n') + 1
}

// diffStride is how many bytes the common prefix and suffix are compared
// at a time (a string comparison, which the runtime vectorises) before the
// last bytes are compared one by one.
const diffStride = 64

// commonSuffixLines is the length of the longest common suffix of a and b
// made of whole lines in both: it starts at the beginning of a or after a
// newline, in each.
func commonSuffixLines(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i+diffStride <= n && a[len(a)-i-diffStride:len(a)-i] == b[len(b)-i-diffStride:len(b)-i] {
		i += diffStride
	}
	for i < n && a[len(a)-1-i] == b[len(b)-1-i] {
		i++
	}
	for i > 0 {
		sa, sb := len(a)-i, len(b)-i
		if (sa == 0 || a[sa-1] == '\n') && (sb == 0 || b[sb-1] == '\n') {
			return i
		}
		i--
	}
	return 0
}

// lastLinesOf is the end of s (which is empty or ends in a newline) holding
// its last k lines.
func lastLinesOf(s string, k int) string {
	i := len(s)
	for ; k > 0 && i > 0; k-- {
		i = strings.LastIndexByte(s[:i-1], '\n') + 1
	}
	return s[i:]
}

// firstLinesOf is the start of s holding its first k lines.
func firstLinesOf(s string, k int) string {
	i := 0
	for ; k > 0 && i < len(s); k-- {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			return s
		}
		i += j + 1
	}
	return s[:i]
}

// splitKeep splits s into lines, each with its ending; a last line without
// one is kept as it is.
func splitKeep(s string) []string {
	if s == "" {
		return nil
	}
	out := make([]string, 0, strings.Count(s, "\n")+1)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// diffOp is one line of an edit script: kept (' '), deleted ('-') or
// inserted ('+'), with its line numbers (from 0) in the old and new text.
type diffOp struct {
	kind   byte
	line   string
	ai, bi int
}

// diffLines is a shortest edit script from a to b, deletions before
// insertions in each change.
func diffLines(a, b []string) []diffOp {
	ids := map[string]int32{}
	intern := func(ls []string) []int32 {
		out := make([]int32, len(ls))
		for i, l := range ls {
			id, ok := ids[l]
			if !ok {
				id = int32(len(ids))
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	d := &differ{a: intern(a), b: intern(b), del: make([]bool, len(a)), ins: make([]bool, len(b))}
	d.compare(0, len(a), 0, len(b))
	ops := make([]diffOp, 0, max(len(a), len(b)))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && d.del[i]:
			ops = append(ops, diffOp{'-', a[i], i, j})
			i++
		case j < len(b) && d.ins[j]:
			ops = append(ops, diffOp{'+', b[j], i, j})
			j++
		default:
			ops = append(ops, diffOp{' ', a[i], i, j})
			i++
			j++
		}
	}
	return ops
}

// differ marks the lines of a deleted and those of b inserted.
type differ struct {
	a, b     []int32
	del, ins []bool
	v1, v2   []int // the bisection's frontiers, reused
}

// compare marks a shortest edit script from a[a0:a1] to b[b0:b1].
func (d *differ) compare(a0, a1, b0, b1 int) {
	for a0 < a1 && b0 < b1 && d.a[a0] == d.b[b0] {
		a0, b0 = a0+1, b0+1
	}
	for a0 < a1 && b0 < b1 && d.a[a1-1] == d.b[b1-1] {
		a1, b1 = a1-1, b1-1
	}
	switch {
	case a0 == a1:
		for j := b0; j < b1; j++ {
			d.ins[j] = true
		}
	case b0 == b1:
		for i := a0; i < a1; i++ {
			d.del[i] = true
		}
	default:
		x, y, ok := d.bisect(a0, a1, b0, b1)
		if !ok {
			for i := a0; i < a1; i++ {
				d.del[i] = true
			}
			for j := b0; j < b1; j++ {
				d.ins[j] = true
			}
			return
		}
		d.compare(a0, x, b0, y)
		d.compare(x, a1, y, b1)
	}
}

// maxBisectSteps bounds the edit distance one bisection searches (in each
// direction) before it settles for a point that is on a path but maybe
// not on a shortest one, as diff does when an exact answer is too
// expensive: a change of many lines spread over a large file (a renamed
// word, say) then costs time in proportion to the lines, not to their
// product. Scripts of up to twice as many changes are exact.
const maxBisectSteps = 256

// bisect finds the middle snake of a shortest path from (a0, b0) to
// (a1, b1) and returns a point on it that splits the problem in two, or
// ok false when the ranges have no line in common. Forward paths are
// searched from the start and reverse ones from the end until they meet;
// past maxBisectSteps, the forward point furthest along is returned.
func (d *differ) bisect(a0, a1, b0, b1 int) (x, y int, ok bool) {
	n, m := a1-a0, b1-b0
	maxD := (n + m + 1) / 2
	off, size := maxD, 2*maxD+2
	if cap(d.v1) < size {
		d.v1, d.v2 = make([]int, size), make([]int, size)
	}
	v1, v2 := d.v1[:size], d.v2[:size]
	for i := range v1 {
		v1[i], v2[i] = -1, -1
	}
	v1[off+1], v2[off+1] = 0, 0
	delta := n - m
	front := delta%2 != 0
	k1start, k1end, k2start, k2end := 0, 0, 0, 0
	bestX, bestY := 0, 0 // the forward point furthest along, within the ranges
	for step := 0; step < maxD; step++ {
		if step > maxBisectSteps {
			if bestX+bestY > 0 && bestX+bestY < n+m {
				return a0 + bestX, b0 + bestY, true
			}
			return 0, 0, false
		}
		for k1 := -step + k1start; k1 <= step-k1end; k1 += 2 {
			i := off + k1
			var x1 int
			if k1 == -step || k1 != step && v1[i-1] < v1[i+1] {
				x1 = v1[i+1]
			} else {
				x1 = v1[i-1] + 1
			}
			y1 := x1 - k1
			for x1 < n && y1 < m && d.a[a0+x1] == d.b[b0+y1] {
				x1, y1 = x1+1, y1+1
			}
			v1[i] = x1
			if x1 <= n && y1 <= m && x1+y1 > bestX+bestY {
				bestX, bestY = x1, y1
			}
			switch {
			case x1 > n:
				k1end += 2
			case y1 > m:
				k1start += 2
			case front:
				if j := off + delta - k1; j >= 0 && j < size && v2[j] != -1 && x1 >= n-v2[j] {
					return a0 + x1, b0 + y1, true
				}
			}
		}
		for k2 := -step + k2start; k2 <= step-k2end; k2 += 2 {
			i := off + k2
			var x2 int
			if k2 == -step || k2 != step && v2[i-1] < v2[i+1] {
				x2 = v2[i+1]
			} else {
				x2 = v2[i-1] + 1
			}
			y2 := x2 - k2
			for x2 < n && y2 < m && d.a[a1-1-x2] == d.b[b1-1-y2] {
				x2, y2 = x2+1, y2+1
			}
			v2[i] = x2
			switch {
			case x2 > n:
				k2end += 2
			case y2 > m:
				k2start += 2
			case !front:
				if j := off + delta - k2; j >= 0 && j < size && v1[j] != -1 {
					x1 := v1[j]
					y1 := off + x1 - j
					if x1 >= n-x2 {
						return a0 + x1, b0 + y1, true
					}
				}
			}
		}
	}
	return 0, 0, false
}

// hunks groups the changes of ops into hunks: [start, end) ranges of ops
// with up to context kept lines around each change; changes closer than
// twice the context share a hunk.
func hunks(ops []diffOp, context int) [][2]int {
	var out [][2]int
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(0, i-context)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				break
			}
			end = run
		}
		stop := min(len(ops), end+context)
		out = append(out, [2]int{start, stop})
		i = stop
	}
	return out
}

// writeHunk writes one hunk: its header, then its lines; offset is the
// number of lines before the compared part of the texts.
func writeHunk(sb *strings.Builder, ops []diffOp, offset int) {
	var na, nb int
	for _, op := range ops {
		if op.kind != '+' {
			na++
		}
		if op.kind != '-' {
			nb++
		}
	}
	sb.WriteString("@@ -" + hunkRange(offset+ops[0].ai, na) + " +" + hunkRange(offset+ops[0].bi, nb) + " @@\n")
	for _, op := range ops {
		sb.WriteByte(op.kind)
		sb.WriteString(op.line)
		if !strings.HasSuffix(op.line, "\n") {
			sb.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange is a hunk header's range of n lines from line start+1 (start
// counts from 0): "L" for one line, "L,N" otherwise, and the line before
// it for an empty range, as diff writes them.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return strconv.Itoa(start) + ",0"
	case 1:
		return strconv.Itoa(start + 1)
	}
	return strconv.Itoa(start+1) + "," + strconv.Itoa(n)
}
