package agent

import (
	"fmt"
	"math"
	"strings"
	"sync"
)

// Token estimates. Until the model server reports usage, a message counts
// one token per charsPerToken bytes of text, messageOverhead tokens for its
// role and framing, and imageTokens per image; the server's
// usage.prompt_tokens (or the prompt's token ids) then scales the
// estimate to what the model's tokenizer counted.
const (
	charsPerToken   = 3.0 // conservative: English prose is nearer 4
	messageOverhead = 4
	imageTokens     = 800
)

// estimator turns message sizes into token counts, calibrated by the
// usage the model server reports. It is shared by an Agent's episodes,
// which all talk to one model.
type estimator struct {
	mu    sync.Mutex
	scale float64
}

func (e *estimator) factor() float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.scale == 0 {
		return 1
	}
	return e.scale
}

// raw is the uncalibrated estimate of one message.
func raw(m *message) float64 {
	return float64(m.chars)/charsPerToken + messageOverhead + float64(m.images*imageTokens)
}

func rawTools(toolChars int) float64 { return float64(toolChars) / charsPerToken }

// calibrate moves the scale towards actual/estimated, smoothed so one
// odd prompt does not swing it, and bounded.
func (e *estimator) calibrate(estimated float64, actual int) {
	if actual <= 0 || estimated <= 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r := float64(actual) / estimated
	if e.scale == 0 {
		e.scale = r
	} else {
		e.scale = 0.7*e.scale + 0.3*r
	}
	e.scale = math.Min(math.Max(e.scale, 0.2), 5)
}

// window is a prompt cut to fit.
type window struct {
	msgs     []message
	cut      bool    // turns were dropped or text clipped
	dropped  int     // turns dropped
	rawTotal float64 // the uncalibrated estimate of what is sent (tools included)
}

// fit returns the prompt to send from the episode's history: the last
// maxImages images kept (older ones become a line of text), and, when the
// estimate is over budget tokens, the turns in the middle dropped so that
// what is kept is the first keepHead share of the budget and the rest from
// the end. A turn (an assistant message and the tool and user messages
// that answer it) is kept or dropped whole, so a tool call is never
// separated from its result; the messages before the first assistant
// message (the system prompt and the task) are always kept, and so is the
// last turn. If that is still over budget, the longest texts are clipped
// in the middle. budget <= 0 means no budget.
func fit(hist []message, toolChars, budget int, keepHead float64, maxImages int, scale float64) window {
	msgs := limitImages(hist, maxImages)
	w := window{msgs: msgs}
	total := rawTools(toolChars)
	for i := range msgs {
		total += raw(&msgs[i])
	}
	w.rawTotal = total
	if budget <= 0 || total*scale <= float64(budget) {
		return w
	}
	B := float64(budget) / scale // the budget in uncalibrated units
	// Turn boundaries: starts[i] is the first message of turn i; turn 0 is
	// everything before the first assistant message.
	starts := []int{0}
	for i, m := range msgs {
		if m.Role == "assistant" && i > 0 {
			starts = append(starts, i)
		}
	}
	size := func(t int) float64 {
		end := len(msgs)
		if t+1 < len(starts) {
			end = starts[t+1]
		}
		var s float64
		for i := starts[t]; i < end; i++ {
			s += raw(&msgs[i])
		}
		return s
	}
	n := len(starts)
	marker := float64(messageOverhead + 20)
	avail := B - rawTools(toolChars) - marker
	head, used := 1, size(0)
	for head < n-1 && used+size(head) <= keepHead*B {
		used += size(head)
		head++
	}
	tail := n - 1
	if n > 1 {
		used += size(n - 1)
	}
	for tail-1 >= head && used+size(tail-1) <= avail {
		tail--
		used += size(tail)
	}
	var out []message
	dropped := max(tail-head, 0)
	if dropped > 0 {
		out = append(out, msgs[:starts[head]]...)
		out = appendMarker(out, fmt.Sprintf("[%d earlier turns were cut here to fit the context budget]", dropped))
		out = append(out, msgs[starts[tail]:]...)
	} else {
		out = append([]message(nil), msgs...)
	}
	w.msgs, w.cut, w.dropped = out, true, dropped
	// Still over: clip the longest texts, keeping their head and tail.
	for range 8 {
		total = rawTools(toolChars)
		longest := -1
		for i := range out {
			total += raw(&out[i])
			if longest < 0 || out[i].chars > out[longest].chars {
				longest = i
			}
		}
		if total <= B || longest < 0 || out[longest].chars < 200 {
			break
		}
		over := (total - B) * charsPerToken
		keep := max(int(float64(out[longest].chars)-over)-64, 100)
		out[longest] = clipMessage(out[longest], keep, keepHead)
	}
	w.rawTotal = rawTools(toolChars)
	for i := range out {
		w.rawTotal += raw(&out[i])
	}
	return w
}

// appendMarker adds a note where turns were cut: to the last message when
// it is the user's text, else as a user message of its own.
func appendMarker(out []message, note string) []message {
	if k := len(out) - 1; k >= 0 && out[k].Role == "user" && out[k].Parts == nil {
		m := out[k]
		m.Text += "\n\n" + note
		m.measure()
		out[k] = m
		return out
	}
	return append(out, newMessage("user", note))
}

// clipMessage shortens a message's text to about keep bytes, keeping the
// keepHead share from its start and the rest from its end.
func clipMessage(m message, keep int, keepHead float64) message {
	clipText := func(s string, keep int) string {
		if len(s) <= keep {
			return s
		}
		h := int(float64(keep) * keepHead)
		t := keep - h
		cut := len(s) - h - t
		return validUTF8(s[:h]) + fmt.Sprintf("\n[... %d bytes cut to fit the context budget ...]\n", cut) + validUTF8(s[len(s)-t:])
	}
	if m.Parts == nil {
		m.Text = clipText(m.Text, keep)
	} else {
		parts := append([]contentPart(nil), m.Parts...)
		for i := range parts {
			if parts[i].Type == "text" && len(parts[i].Text) > keep {
				parts[i].Text = clipText(parts[i].Text, keep)
			}
		}
		m.Parts = parts
	}
	// Tool call arguments are left whole: a clipped call would not parse.
	m.measure()
	return m
}

// validUTF8 drops the bytes of a rune split by a byte cut.
func validUTF8(s string) string { return strings.ToValidUTF8(s, "") }

// limitImages replaces all but the last maxImages images by a line of
// text (maxImages < 0: keep all).
func limitImages(hist []message, maxImages int) []message {
	if maxImages < 0 {
		return hist
	}
	seen := 0
	var out []message
	for i := len(hist) - 1; i >= 0; i-- {
		m := hist[i]
		if m.images == 0 {
			continue
		}
		if seen+m.images <= maxImages {
			seen += m.images
			continue
		}
		if out == nil {
			out = append([]message(nil), hist...)
		}
		parts := append([]contentPart(nil), m.Parts...)
		for j := len(parts) - 1; j >= 0; j-- {
			if parts[j].Type != "image_url" {
				continue
			}
			if seen < maxImages {
				seen++
				continue
			}
			parts[j] = contentPart{Type: "text", Text: "[an earlier image, left out]"}
		}
		m.Parts = parts
		m.measure()
		out[i] = m
	}
	if out == nil {
		return hist
	}
	return out
}
