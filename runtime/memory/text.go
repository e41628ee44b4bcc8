package memory

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Terms splits text into the lower-case terms that external-memory
// retrieval matches on: words of letters and digits (at least two
// characters, English stop words left out) and, for CJK text, which has no
// spaces, overlapping character bigrams (bigrams of particles such as 的 or
// 了 left out). Every provider that matches "by query overlap" uses it, so
// they agree on what a shared word is.
func Terms(text string) []string {
	var out []string
	forEachTerm(text, func(term, _ string) { out = append(out, term) })
	return out
}

// TermSet is Terms as a set.
func TermSet(text string) map[string]struct{} {
	set := make(map[string]struct{})
	forEachTerm(text, func(term, _ string) { set[term] = struct{}{} })
	return set
}

// Overlap is the share of the query's distinct terms that the entry also
// has: 0 when they share no word, 1 when every query term occurs in the entry.
func Overlap(query, entry map[string]struct{}) float64 {
	if len(query) == 0 {
		return 0
	}
	n := 0
	for t := range query {
		if _, ok := entry[t]; ok {
			n++
		}
	}
	return float64(n) / float64(len(query))
}

// Keywords returns up to n keywords of the texts: their terms ranked by
// frequency, then by first occurrence, in the case they were first written
// in. Pure numbers are left out.
func Keywords(n int, texts ...string) []string {
	type kw struct {
		display string
		count   int
		first   int
	}
	seen := make(map[string]*kw)
	order := 0
	for _, text := range texts {
		forEachTerm(text, func(term, display string) {
			if isNumber(term) {
				return
			}
			if k, ok := seen[term]; ok {
				k.count++
				return
			}
			seen[term] = &kw{display: display, count: 1, first: order}
			order++
		})
	}
	all := make([]*kw, 0, len(seen))
	for _, k := range seen {
		all = append(all, k)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].count != all[j].count {
			return all[i].count > all[j].count
		}
		return all[i].first < all[j].first
	})
	if len(all) > n {
		all = all[:n]
	}
	out := make([]string, len(all))
	for i, k := range all {
		out[i] = k.display
	}
	return out
}

// forEachTerm calls fn with each term of text, lower-cased, and the form in
// which it was written.
func forEachTerm(text string, fn func(term, display string)) {
	var word strings.Builder
	var cjk []rune
	flushWord := func() {
		if word.Len() == 0 {
			return
		}
		w := word.String()
		word.Reset()
		lower := strings.ToLower(w)
		if utf8.RuneCountInString(lower) < 2 || stopWords[lower] {
			return
		}
		fn(lower, w)
	}
	flushCJK := func() {
		switch len(cjk) {
		case 0:
		case 1:
			if !stopRunes[cjk[0]] {
				fn(string(cjk), string(cjk))
			}
		default:
			for i := 0; i+1 < len(cjk); i++ {
				a, b := cjk[i], cjk[i+1]
				if particles[a] || particles[b] || (stopRunes[a] && stopRunes[b]) {
					continue
				}
				bi := string(cjk[i : i+2])
				if stopBigrams[bi] {
					continue
				}
				fn(bi, bi)
			}
		}
		cjk = cjk[:0]
	}
	for _, r := range text {
		switch {
		case isCJK(r):
			flushWord()
			cjk = append(cjk, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_':
			flushCJK()
			word.WriteRune(r)
		default:
			flushWord()
			flushCJK()
		}
	}
	flushWord()
	flushCJK()
}

func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

func isNumber(s string) bool {
	for _, r := range s {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// particles never start or end a CJK term.
var particles = runeSet("的了吗呢吧啊呀么着过之")

// stopRunes are common CJK function characters: a bigram of two of them, or
// a lone one, is not a term.
var stopRunes = runeSet("的了吗呢吧啊呀么着过之是在有和与及或就都也还又很太更最我你他她它们这那个一不没把被让给对从到为以于上下中")

var stopBigrams = map[string]bool{
	"什么": true, "怎么": true, "这个": true, "那个": true, "一个": true, "我们": true, "你们": true,
	"他们": true, "可以": true, "没有": true, "就是": true, "还是": true, "但是": true, "因为": true,
	"所以": true, "如果": true, "请问": true,
}

var stopWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`a an and are as at be been but by can could did do does for from had has have
		he her him his how i if in into is it its me my no not of on or our she so than that the their them then
		there these they this to too us was we were what when where which who why will with would you your yes
		please just also about am any all some`) {
		m[w] = true
	}
	return m
}()

func runeSet(s string) map[rune]bool {
	m := make(map[rune]bool)
	for _, r := range s {
		m[r] = true
	}
	return m
}
