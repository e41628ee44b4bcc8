package tools

import (
	"strconv"
	"unicode/utf8"
)

// truncateMiddle caps s at limit bytes. It keeps the head and the tail, the
// head slightly favoured, and puts a marker naming the dropped byte count
// between them: "\n…[truncated 12345 bytes]…\n". The result, marker
// included, is at most limit bytes, and no UTF-8 rune is split. A limit too
// small to hold the marker keeps only the head. A limit <= 0 means no cap.
func truncateMiddle(s string, limit int) string {
	if limit <= 0 || len(s) <= limit {
		return s
	}
	// The dropped count has at most as many digits as len(s).
	budget := limit - len(truncationMarker(len(s)))
	if budget < 2 {
		return s[:runeStartBefore(s, limit)]
	}
	head := runeStartBefore(s, (budget+1)/2)
	tail := runeStartAfter(s, len(s)-(budget-head))
	return s[:head] + truncationMarker(tail-head) + s[tail:]
}

// truncationMarker stands for n dropped bytes.
func truncationMarker(n int) string {
	return "\n…[truncated " + strconv.Itoa(n) + " bytes]…\n"
}

// runeStartBefore returns the largest rune boundary <= i. In invalid UTF-8
// it gives up after utf8.UTFMax-1 bytes, as no valid rune is longer.
func runeStartBefore(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	for j := i; j >= 0 && i-j < utf8.UTFMax; j-- {
		if j == 0 || utf8.RuneStart(s[j]) {
			return j
		}
	}
	return i
}

// runeStartAfter returns the smallest rune boundary >= i, with the same
// limit as runeStartBefore.
func runeStartAfter(s string, i int) int {
	for j := i; j <= len(s) && j-i < utf8.UTFMax; j++ {
		if j == len(s) || utf8.RuneStart(s[j]) {
			return j
		}
	}
	return i
}
