package simuser

import (
	"math/rand/v2"
	"strings"
	"unicode"
)

// Style is how a reply is written, in the four ways the simulated users
// care about.
type Style struct {
	Lower    bool // every letter in lowercase
	Bullets  bool // the facts as a bullet list, one a line
	Long     bool // all four facts (30 words or more), not the first two (under 30)
	Question bool // ends with a question back to the user
}

// closings are the questions a reply may end with.
var closings = []string{"Do you want to know more?", "Shall I go on?", "Is there anything else you want to know?"}

// Reply writes topic t's answer in style s; rng picks the closing question.
func (t Topic) Reply(s Style, rng *rand.Rand) string {
	facts := t.Facts[:2]
	if s.Long {
		facts = t.Facts[:]
	}
	var b strings.Builder
	for i, f := range facts {
		switch {
		case s.Bullets:
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString("- " + f)
		case i > 0:
			b.WriteString(" " + f)
		default:
			b.WriteString(f)
		}
	}
	if s.Question {
		if s.Bullets {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(closings[rng.IntN(len(closings))])
	}
	out := b.String()
	if s.Lower {
		out = strings.ToLower(out)
	}
	return out
}

// Answered says whether reply answers t's question: it holds one of t's
// facts, in any case.
func (t Topic) Answered(reply string) bool {
	r := strings.ToLower(reply)
	for _, f := range t.Facts {
		if strings.Contains(r, strings.ToLower(strings.TrimSuffix(f, "."))) {
			return true
		}
	}
	return false
}

// A Preference is something a user wants of every reply: a test a reply
// meets or not, and the correction that states it.
type Preference struct {
	// Name is its id: lowercase, no-bullets, short, question; the
	// adversary's: bullets, long.
	Name string
	// Correction states it, as a user asks for it after a reply that
	// missed it (and as the judge's hint).
	Correction string
	// Met says whether a reply meets it.
	Met func(reply string) bool
	// Apply changes a style so that its replies meet it.
	Apply func(*Style)
}

// Preferences are the four preferences of the simulated users. A reply can
// meet all four at once.
var Preferences = []Preference{
	{Name: "lowercase", Correction: "Please write in lowercase letters only.", Met: isLower, Apply: func(s *Style) { s.Lower = true }},
	{Name: "no-bullets", Correction: "Please do not use bullet lists.", Met: func(r string) bool { return !hasBullets(r) },
		Apply: func(s *Style) { s.Bullets = false }},
	{Name: "short", Correction: "Please keep your answers under 30 words.", Met: func(r string) bool { return Words(r) < 30 },
		Apply: func(s *Style) { s.Long = false }},
	{Name: "question", Correction: "Please always end your answer with a question.", Met: func(r string) bool {
		return strings.HasSuffix(strings.TrimSpace(r), "?")
	}, Apply: func(s *Style) { s.Question = true }},
}

// Adversarial are preferences that contradict two of the others (an
// adversarial user asks for them): bullet lists, and long answers.
var Adversarial = []Preference{
	{Name: "bullets", Correction: "Please always answer with a bullet list.", Met: hasBullets, Apply: func(s *Style) { s.Bullets = true }},
	{Name: "long", Correction: "Please give long answers of 30 words or more.", Met: func(r string) bool { return Words(r) >= 30 },
		Apply: func(s *Style) { s.Long = true }},
}

// PreferenceByName finds a preference, the adversarial ones included.
func PreferenceByName(name string) (Preference, bool) {
	for _, p := range append(append([]Preference(nil), Preferences...), Adversarial...) {
		if p.Name == name {
			return p, true
		}
	}
	return Preference{}, false
}

// Words counts a reply's words (runs of non-space; a bullet's dash is not
// a word).
func Words(r string) int {
	n := 0
	for _, f := range strings.Fields(r) {
		if f != "-" && f != "*" && f != "•" {
			n++
		}
	}
	return n
}

func letters(r string, keep func(rune) bool) bool {
	seen := false
	for _, c := range r {
		if unicode.IsLetter(c) {
			if !keep(c) {
				return false
			}
			seen = true
		}
	}
	return seen
}

func isLower(r string) bool { return letters(r, func(c rune) bool { return !unicode.IsUpper(c) }) }

func hasBullets(r string) bool {
	for _, line := range strings.Split(r, "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "- ") || strings.HasPrefix(l, "* ") || strings.HasPrefix(l, "• ") {
			return true
		}
	}
	return false
}
