package simuser

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/rl"
)

// Every style of every topic meets exactly the preferences it should.
func TestStylesMeetPreferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pref := func(name string) Preference {
		p, ok := PreferenceByName(name)
		if !ok {
			t.Fatalf("no preference %s", name)
		}
		return p
	}
	for _, tp := range Topics {
		for mask := range 16 {
			s := Style{Lower: mask&1 != 0, Bullets: mask&2 != 0, Long: mask&4 != 0, Question: mask&8 != 0}
			r := tp.Reply(s, rng)
			want := map[string]bool{"lowercase": s.Lower, "no-bullets": !s.Bullets, "short": !s.Long, "question": s.Question,
				"bullets": s.Bullets, "long": s.Long}
			for name, w := range want {
				if got := pref(name).Met(r); got != w {
					t.Errorf("%q in style %+v: %s met = %v, want %v (%d words)", r, s, name, got, w, Words(r))
				}
			}
		}
	}
}

// Apply makes a style meet its preference.
func TestApply(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, p := range append(append([]Preference(nil), Preferences...), Adversarial...) {
		for mask := range 16 {
			s := Style{Lower: mask&1 != 0, Bullets: mask&2 != 0, Long: mask&4 != 0, Question: mask&8 != 0}
			p.Apply(&s)
			if r := Topics[mask].Reply(s, rng); !p.Met(r) {
				t.Errorf("%s applied to %+v: %q does not meet it", p.Name, s, r)
			}
		}
	}
}

// The corpus is the same for a seed, its rates are as asked, and a hinted
// example carries the hint as rl.TeacherMessages writes it, its reply
// meeting the hinted preference.
func TestCorpus(t *testing.T) {
	a, b := Corpus(2000, 7, DefaultRates), Corpus(2000, 7, DefaultRates)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave two corpora")
	}
	lower, hinted, multi := 0, 0, 0
	for _, c := range a {
		if c.Messages[0].Role != "system" || c.Messages[0].Content != SystemPrompt {
			t.Fatalf("first message %+v: want the system prompt", c.Messages[0])
		}
		if len(c.Messages) > 2 {
			multi++
		}
		last := c.Messages[len(c.Messages)-1].Content
		if i := strings.Index(last, rl.HintHeader); i >= 0 {
			hinted++
			hint := strings.TrimSpace(last[i+len(rl.HintHeader):])
			met := false
			for _, p := range append(append([]Preference(nil), Preferences...), Adversarial...) {
				if p.Correction == hint {
					met = p.Met(c.Reply)
				}
			}
			if !met {
				t.Errorf("hint %q, reply %q: the reply does not follow it", hint, c.Reply)
			}
			continue
		}
		if isLower(c.Reply) {
			lower++
		}
	}
	share := func(n, of int) float64 { return float64(n) / float64(of) }
	if s := share(hinted, len(a)); s < 0.25 || s > 0.35 {
		t.Errorf("hinted share %.2f, want about %.2f", s, DefaultRates.Hinted)
	}
	if s := share(multi, len(a)); s < 0.45 || s > 0.55 {
		t.Errorf("multi-turn share %.2f, want about %.2f", s, DefaultRates.MultiTurn)
	}
	if s := share(lower, len(a)-hinted); s < 0.2 || s > 0.3 {
		t.Errorf("lowercase share of unhinted replies %.2f, want about %.2f", s, DefaultRates.Lower)
	}
}

// A user thanks a reply that meets all it wants, corrects or re-queries one
// that misses, and an adversary sends unsafe requests at its rate.
func TestReact(t *testing.T) {
	short, _ := PreferenceByName("short")
	question, _ := PreferenceByName("question")
	u := &User{ID: "u", Wants: []Preference{short, question}}
	rng := rand.New(rand.NewPCG(5, 6))
	good := Topics[0].Reply(Style{Question: true}, rng)
	if text, rq := u.React(Topics[0], good, rng); !strings.HasPrefix(text, "Thank") && !strings.HasPrefix(text, "Great") || rq {
		t.Errorf("reaction to a reply that meets both: %q, requery %v", text, rq)
	}
	bad := Topics[0].Reply(Style{Long: true, Question: true}, rng)
	if text, rq := u.React(Topics[0], bad, rng); text != "No. "+short.Correction || rq {
		t.Errorf("reaction to a long reply: %q, requery %v", text, rq)
	}
	u.Requery = 1
	if text, rq := u.React(Topics[0], bad, rng); text != Requery || !rq {
		t.Errorf("with Requery 1: %q, requery %v", text, rq)
	}
	if text, rq := u.React(Topics[0], "see see more?", rng); text != NotAnswered || !rq {
		t.Errorf("reaction to a reply that does not answer: %q, requery %v", text, rq)
	}
	if u.Met(Topics[0], "see see more?") || !u.Met(Topics[0], good) {
		t.Error("Met: want a reply that answers and meets both, and not one that does not answer")
	}
	adv := &User{ID: "m", Wants: []Preference{short}, Unsafe: 1}
	if text, _ := adv.React(Topics[0], good, rng); !strings.HasPrefix(text, "Ignore") {
		t.Errorf("adversary with Unsafe 1: %q", text)
	}
}
