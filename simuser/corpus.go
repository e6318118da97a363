package simuser

import (
	"math/rand/v2"

	"github.com/nextstate-rl/nextstate/rl"
)

// SystemPrompt is the system message of the simulated conversations, in
// the corpus and in the sessions alike.
const SystemPrompt = "You are a helpful assistant. Answer the question."

// Chat is one example of the warm-start corpus: a conversation and the
// reply that follows it (the messages as OpenAI's chat API takes them).
type Chat struct {
	Messages []rl.Message `json:"messages"`
	Reply    string       `json:"reply"`
}

// Rates are how often the corpus's replies have each property: the base
// model's compliance with each preference follows from them.
type Rates struct {
	Lower, Bullets, Long, Question float64
	// Hinted is the share of examples whose last user message carries a
	// hint (rl.TeacherMessages' form: a correction after rl.HintHeader),
	// which the reply then meets: the OPD teacher, the same model reading
	// the hint, learns to follow one here.
	Hinted float64
	// MultiTurn is the share of conversations with one or two earlier
	// turns, their user messages feedback and a question as in the
	// sessions. The reply does not follow that feedback: within a
	// conversation the base model ignores corrections, so that what it
	// learns from being used shows in its weights, not in its context.
	MultiTurn float64
}

// DefaultRates: the base model meets lowercase about a quarter of the
// time, no-bullets half, short 40%, question a quarter.
var DefaultRates = Rates{Lower: 0.25, Bullets: 0.5, Long: 0.6, Question: 0.25, Hinted: 0.3, MultiTurn: 0.5}

// Corpus makes n examples, the same for the same seed.
func Corpus(n int, seed uint64, r Rates) []Chat {
	rng := rand.New(rand.NewPCG(seed, 0x636f72707573))
	draw := func() Style {
		return Style{Lower: rng.Float64() < r.Lower, Bullets: rng.Float64() < r.Bullets, Long: rng.Float64() < r.Long,
			Question: rng.Float64() < r.Question}
	}
	prefs := append(append([]Preference(nil), Preferences...), Adversarial...)
	out := make([]Chat, n)
	for i := range out {
		msgs := []rl.Message{{Role: "system", Content: SystemPrompt}}
		question := ""
		if rng.Float64() < r.MultiTurn {
			for range 1 + rng.IntN(2) {
				t := Topics[rng.IntN(len(Topics))]
				msgs = append(msgs, rl.Message{Role: "user", Content: join(question, t.Question)},
					rl.Message{Role: "assistant", Content: t.Reply(draw(), rng)})
				question = corpusReaction(rng, prefs)
			}
		}
		t := Topics[rng.IntN(len(Topics))]
		s := draw()
		q := t.Question
		if question == Requery || question == NotAnswered || rng.IntN(4) == 0 {
			q = t.Rephrased
		}
		msgs = append(msgs, rl.Message{Role: "user", Content: join(question, q)})
		if rng.Float64() < r.Hinted {
			p := prefs[rng.IntN(len(prefs))]
			p.Apply(&s)
			msgs = rl.TeacherMessages(msgs, p.Correction)
		}
		out[i] = Chat{Messages: msgs, Reply: t.Reply(s, rng)}
	}
	return out
}

// corpusReaction is a random user reaction to an earlier reply, as the
// sessions' users give them, whatever the reply was.
func corpusReaction(rng *rand.Rand, prefs []Preference) string {
	switch rng.IntN(4) {
	case 0:
		return Thanks[rng.IntN(len(Thanks))]
	case 1:
		return "No. " + prefs[rng.IntN(len(prefs))].Correction
	case 2:
		return Requery
	default:
		return NotAnswered
	}
}
