package rl

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/nextstate-rl/nextstate/gym"
)

// Prompt kinds: the families of env a judge template is written for. A
// JudgeInput names one; an empty or unknown kind uses KindDefault's
// template (unless LoadTemplates added a file for it).
const (
	KindTerminal = "terminal" // shell tasks: first and last two turns, action, tool results
	KindGUI      = "gui"      // web and desktop: previous actions, screenshots before and after
	KindSWE      = "swe"      // repositories: the issue, last steps with exit codes, command and output
	KindToolCall = "toolcall" // function calling: the problem, the trajectory, action, result
	KindChat     = "chat"     // a personal agent's conversation (the proxy): the conversation, the answer, the next message
	KindDefault  = "default"  // anything else
)

// commonTemplate holds the definitions every kind's template may use.
const commonTemplate = "common"

//go:embed prompts/*.tmpl
var embeddedPrompts embed.FS

// Turn is one earlier step of the trajectory, as a judge sees it.
type Turn struct {
	Action    string
	NextState string
	// ExitCode is the command's exit status, when the env reports one.
	ExitCode *int
}

// JudgeInput is what a judge reads about one step.
type JudgeInput struct {
	// Kind picks the template and the history window: KindTerminal,
	// KindGUI, KindSWE, KindToolCall, or any kind LoadTemplates found a
	// file for; "" means KindDefault.
	Kind string
	// Env is the env kind's name (what a RuleJudge dispatches on).
	Env string
	// Instruction is the task as the agent was given it (the issue, the problem).
	Instruction string
	// History holds the earlier steps of the episode, oldest first. The
	// kind's Window chooses which of them the prompt shows.
	History []Turn
	// Step is the judged step's number within its episode, from 1;
	// 0 means len(History)+1.
	Step int
	// Action and NextState are the judged step's action and the env's
	// answer to it, as text (see ActionText and ObservationText).
	Action    string
	NextState string
	ExitCode  *int
	// Before and After are the screens before and after the action, for
	// GUI kinds: inline data or a store blob reference ("sha256:..."),
	// which the Judge resolves with its BlobResolver. They are sent as
	// image_url data URLs.
	Before, After *gym.Blob
	// Conversation is the chat a conversational agent answered, for
	// KindChat (the proxy's turns): its instructions (system messages) and
	// the messages before its answer, oldest first. Action is then the
	// answer, and NextState the message that came next (MessageText), whose
	// role NextRole names: "user" (the user's next message) or "tool" (the
	// result of a tool the agent called).
	Conversation []Message
	NextRole     string
}

// Window says which earlier turns a prompt shows: the first Head and the
// last Tail (all of them when Tail is negative), each once.
type Window struct {
	Head int `json:"head"`
	Tail int `json:"tail"`
}

// DefaultWindow is the history window of a kind, after OpenClaw-RL:
// terminal shows the first two and the last two turns, SWE the last eight,
// GUI and tool-call every earlier turn (bounded by TextLimits.History),
// and other kinds the first two and the last two.
func DefaultWindow(kind string) Window {
	switch kind {
	case KindGUI, KindToolCall:
		return Window{Head: 0, Tail: -1}
	case KindSWE:
		return Window{Head: 0, Tail: 8}
	default:
		return Window{Head: 2, Tail: 2}
	}
}

// TextLimits cap, in characters (runes), what a prompt shows; a longer text
// keeps its beginning and its end around a marker saying how much was cut.
// Zero fields take the defaults in brackets.
type TextLimits struct {
	Instruction int `json:"instruction,omitempty"`  // the task [8000]
	Action      int `json:"action,omitempty"`       // the judged action [4000]
	NextState   int `json:"next_state,omitempty"`   // the judged next state [4000]
	HistoryItem int `json:"history_item,omitempty"` // each earlier action and next state [1000]
	Message     int `json:"message,omitempty"`      // each message of a Conversation [2000]
	// History bounds the earlier turns together [32000]; past it the
	// oldest turns after the window's head are left out. It bounds a
	// Conversation's messages together too; past it the oldest after the
	// leading system messages are left out.
	History int `json:"history,omitempty"`
}

func (l TextLimits) orDefault() TextLimits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.Instruction, 8000)
	def(&l.Action, 4000)
	def(&l.NextState, 4000)
	def(&l.HistoryItem, 1000)
	def(&l.Message, 2000)
	def(&l.History, 32000)
	return l
}

// PromptData is what a template executes on. Texts are already cut to
// their TextLimits.
type PromptData struct {
	Kind        string
	Instruction string
	// Step is the judged step's number, from 1.
	Step int
	// History holds the shown earlier turns; Omitted counts those left out.
	History []HistoryItem
	Omitted int
	// Action, NextState and ExitCode ("" when unknown) are the judged step's.
	Action, NextState, ExitCode string
	// HasBefore and HasAfter say whether the screens exist; a template
	// places them with {{image "before"}} and {{image "after"}}.
	HasBefore, HasAfter bool
	// Conversation holds the shown messages of a KindChat input's
	// conversation; NextRole is the role of its next state.
	Conversation []ChatLine
	NextRole     string
}

// ChatLine is one shown message of a conversation.
type ChatLine struct {
	Role, Text string
	// GapBefore counts the messages left out just before this one.
	GapBefore int
}

// HistoryItem is one shown earlier turn.
type HistoryItem struct {
	Step              int // the turn's number, from 1
	Action, NextState string
	ExitCode          string // "" when unknown
	// GapBefore counts the turns left out just before this one.
	GapBefore int
}

// JudgeMessage is one chat message of a judge's prompt.
type JudgeMessage struct {
	Role  string // "system" or "user"
	Parts []ContentPart
}

// ContentPart is a piece of a message: text, or an image.
type ContentPart struct {
	Text  string
	Image *gym.Blob
}

// Text joins the text parts of a message.
func (m JudgeMessage) Text() string {
	var b strings.Builder
	for _, p := range m.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// Templates are the judge prompts, one template set per kind. Each set is
// common.tmpl parsed with the kind's <kind>.tmpl, which defines "system"
// (the system message; may render empty, then there is none) and "user".
// A Templates is safe for concurrent use.
type Templates struct {
	sets map[string]*template.Template
}

// DefaultTemplates returns the built-in templates (rl/prompts/*.tmpl).
func DefaultTemplates() *Templates {
	t, err := buildTemplates(nil, "")
	if err != nil {
		panic("rl: built-in prompt templates: " + err.Error())
	}
	return t
}

// LoadTemplates returns the built-in templates with those of dir in their
// place: dir/terminal.tmpl replaces the terminal template, dir/common.tmpl
// the shared definitions, and a file of a new name (dir/web.tmpl) adds a
// kind. Each template is parsed and run on a sample input here, so a
// mistake is reported now rather than at the first judged step.
func LoadTemplates(dir string) (*Templates, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("prompt templates: %w", err)
	}
	files := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".tmpl") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("prompt templates: %w", err)
		}
		files[strings.TrimSuffix(name, ".tmpl")] = string(b)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("prompt templates: no *.tmpl file in %s (the built-in names are %s.tmpl)",
			dir, strings.Join(append([]string{commonTemplate}, builtinKinds()...), ".tmpl, "))
	}
	return buildTemplates(files, dir)
}

func builtinKinds() []string {
	return []string{KindChat, KindDefault, KindGUI, KindSWE, KindTerminal, KindToolCall}
}

// buildTemplates parses the embedded files overridden by files.
func buildTemplates(files map[string]string, dir string) (*Templates, error) {
	texts := map[string]string{}
	err := fs.WalkDir(embeddedPrompts, "prompts", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := embeddedPrompts.ReadFile(p)
		texts[strings.TrimSuffix(filepath.Base(p), ".tmpl")] = string(b)
		return err
	})
	if err != nil {
		return nil, err
	}
	for k, v := range files {
		texts[k] = v
	}
	where := func(name string) string {
		if _, ok := files[name]; ok {
			return filepath.Join(dir, name+".tmpl")
		}
		return "built-in " + name + ".tmpl"
	}
	t := &Templates{sets: map[string]*template.Template{}}
	for kind, text := range texts {
		if kind == commonTemplate {
			continue
		}
		set, err := template.New(kind).Funcs(templateFuncs).Parse(texts[commonTemplate])
		if err != nil {
			return nil, fmt.Errorf("prompt template %s: %w", where(commonTemplate), err)
		}
		if set, err = set.Parse(text); err != nil {
			return nil, fmt.Errorf("prompt template %s: %w", where(kind), err)
		}
		for _, name := range []string{"system", "user"} {
			if set.Lookup(name) == nil {
				return nil, fmt.Errorf("prompt template %s: it must define %q (with {{define %q}}...{{end}}); it defines %s",
					where(kind), name, name, set.DefinedTemplates())
			}
		}
		t.sets[kind] = set
		if _, err := t.render(kind, samplePromptData(kind)); err != nil {
			return nil, fmt.Errorf("prompt template %s: %w", where(kind), err)
		}
	}
	return t, nil
}

// Kinds lists the kinds that have a template of their own, sorted.
func (t *Templates) Kinds() []string {
	out := make([]string, 0, len(t.sets))
	for k := range t.sets {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Image placeholders: the image template function writes one, and render
// cuts the user message at it. Inputs cannot contain them: NUL bytes are
// replaced before the templates run.
const (
	imageBefore = "\x00image:before\x00"
	imageAfter  = "\x00image:after\x00"
)

var templateFuncs = template.FuncMap{
	// image places the screen "before" or "after" the action.
	"image": func(which string) (string, error) {
		switch which {
		case "before":
			return imageBefore, nil
		case "after":
			return imageAfter, nil
		}
		return "", fmt.Errorf(`image %q: want "before" or "after"`, which)
	},
}

// Render builds the judge's messages for in: the kind's template run on
// in's texts, cut to lim, with the earlier turns w shows.
func (t *Templates) Render(in JudgeInput, w Window, lim TextLimits) ([]JudgeMessage, error) {
	kind := in.Kind
	if _, ok := t.sets[kind]; !ok {
		kind = KindDefault
	}
	data := promptData(in, w, lim.orDefault())
	msgs, err := t.render(kind, data)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		for i, p := range m.Parts { // m.Parts shares its array with msgs
			if p.Image == nil {
				continue
			}
			which := "before"
			if p.Image == placeholderAfter {
				which = "after"
			}
			img := in.Before
			if which == "after" {
				img = in.After
			}
			if img == nil {
				return nil, fmt.Errorf("prompt template %s shows the screen %s the action, but the input has none", kind, which)
			}
			m.Parts[i].Image = img
		}
	}
	return msgs, nil
}

// Markers for the image parts render finds; Render swaps in the input's.
var (
	placeholderBefore = &gym.Blob{MIME: "before"}
	placeholderAfter  = &gym.Blob{MIME: "after"}
)

// render runs the kind's set on data and splits the output into messages.
func (t *Templates) render(kind string, data PromptData) ([]JudgeMessage, error) {
	set := t.sets[kind]
	var msgs []JudgeMessage
	for _, role := range []string{"system", "user"} {
		var b bytes.Buffer
		if err := set.ExecuteTemplate(&b, role, data); err != nil {
			return nil, err
		}
		text := strings.TrimSpace(b.String())
		if text == "" {
			if role == "user" {
				return nil, errors.New(`the "user" template rendered empty`)
			}
			continue
		}
		if role == "system" && strings.ContainsRune(text, 0) {
			return nil, errors.New(`images can only be placed in the "user" template`)
		}
		msgs = append(msgs, JudgeMessage{Role: role, Parts: splitImages(text)})
	}
	return msgs, nil
}

// splitImages cuts text at the image placeholders.
func splitImages(text string) []ContentPart {
	var parts []ContentPart
	for text != "" {
		i := strings.IndexByte(text, 0)
		if i < 0 {
			parts = append(parts, ContentPart{Text: text})
			break
		}
		if i > 0 {
			parts = append(parts, ContentPart{Text: text[:i]})
		}
		rest := text[i:]
		switch {
		case strings.HasPrefix(rest, imageBefore):
			parts = append(parts, ContentPart{Image: placeholderBefore})
			text = rest[len(imageBefore):]
		case strings.HasPrefix(rest, imageAfter):
			parts = append(parts, ContentPart{Image: placeholderAfter})
			text = rest[len(imageAfter):]
		default: // a stray NUL from a template's own text: drop it
			text = rest[1:]
		}
	}
	return parts
}

// promptData cuts in to its limits and picks the shown history.
func promptData(in JudgeInput, w Window, lim TextLimits) PromptData {
	step := in.Step
	if step <= 0 {
		step = len(in.History) + 1
	}
	d := PromptData{
		Kind:        in.Kind,
		Instruction: clip(in.Instruction, lim.Instruction),
		Step:        step,
		Action:      clip(in.Action, lim.Action),
		NextState:   clip(in.NextState, lim.NextState),
		ExitCode:    exitString(in.ExitCode),
		HasBefore:   in.Before != nil,
		HasAfter:    in.After != nil,
		NextRole:    in.NextRole,
	}
	d.Conversation = chatLines(in.Conversation, lim)
	first := step - len(in.History) // the number of History[0]
	idx := windowIndices(len(in.History), w)
	items := make([]HistoryItem, len(idx))
	sizes := make([]int, len(idx))
	for i, h := range idx {
		t := in.History[h]
		items[i] = HistoryItem{Step: first + h, Action: clip(t.Action, lim.HistoryItem),
			NextState: clip(t.NextState, lim.HistoryItem), ExitCode: exitString(t.ExitCode)}
		sizes[i] = utf8.RuneCountInString(items[i].Action) + utf8.RuneCountInString(items[i].NextState)
	}
	keep := fitBudget(sizes, min(max(w.Head, 0), len(items)), lim.History)
	d.History = make([]HistoryItem, len(keep))
	prev := -1
	for i, k := range keep {
		d.History[i] = items[k]
		d.History[i].GapBefore = idx[k] - prev - 1
		prev = idx[k]
	}
	d.Omitted = len(in.History) - len(keep)
	return d
}

// chatLines cuts a conversation to its limits: each message to
// lim.Message, all of them together to lim.History, past which the oldest
// messages after the leading system ones are left out.
func chatLines(msgs []Message, lim TextLimits) []ChatLine {
	lines := make([]ChatLine, len(msgs))
	sizes := make([]int, len(msgs))
	head := 0
	for i, m := range msgs {
		lines[i] = ChatLine{Role: m.Role, Text: clip(MessageText(m), lim.Message)}
		sizes[i] = utf8.RuneCountInString(lines[i].Text)
		if head == i && m.Role == "system" {
			head++
		}
	}
	keep := fitBudget(sizes, head, lim.History)
	out := make([]ChatLine, len(keep))
	prev := -1
	for i, k := range keep {
		out[i] = lines[k]
		out[i].GapBefore = k - prev - 1
		prev = k
	}
	return out
}

// fitBudget returns the indices of the items to show, in order, given
// their sizes: while they add up to more than budget, the oldest item
// after the first head is left out, then the head's newest.
func fitBudget(sizes []int, head, budget int) []int {
	keep := make([]int, len(sizes))
	size := 0
	for i, n := range sizes {
		keep[i] = i
		size += n
	}
	for size > budget && len(keep) > 0 {
		drop := head
		if drop >= len(keep) {
			drop = len(keep) - 1
			head = drop
		}
		size -= sizes[keep[drop]]
		keep = slices.Delete(keep, drop, drop+1)
	}
	return keep
}

// windowIndices returns the indices of n turns that w shows, in order.
func windowIndices(n int, w Window) []int {
	head := min(max(w.Head, 0), n)
	tailStart := head
	if w.Tail >= 0 {
		tailStart = max(n-w.Tail, head)
	}
	out := make([]int, 0, head+n-tailStart)
	for i := 0; i < head; i++ {
		out = append(out, i)
	}
	for i := tailStart; i < n; i++ {
		out = append(out, i)
	}
	return out
}

// clip removes NUL bytes and keeps at most limit runes of s: its beginning
// and its end around a marker saying how many were cut.
func clip(s string, limit int) string {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	n := utf8.RuneCountInString(s)
	if n <= limit {
		return s
	}
	r := []rune(s)
	keep := max(limit, 2)
	head, tail := keep/2, keep-keep/2
	return string(r[:head]) + "\n[... " + strconv.Itoa(n-keep) + " characters cut ...]\n" + string(r[n-tail:])
}

func exitString(code *int) string {
	if code == nil {
		return ""
	}
	return strconv.Itoa(*code)
}

// samplePromptData is a full input, to try a template on when it loads.
func samplePromptData(kind string) PromptData {
	code := 0
	in := JudgeInput{Kind: kind, Instruction: "Create hello.txt containing hi.",
		History: []Turn{{Action: "ls", NextState: "", ExitCode: &code}, {Action: "pwd", NextState: "/app"},
			{Action: "cat x", NextState: "no such file", ExitCode: &code}},
		Action: "echo hi > hello.txt", NextState: "", ExitCode: &code,
		Before: &gym.Blob{MIME: "image/png"}, After: &gym.Blob{MIME: "image/png"},
		Conversation: []Message{{Role: "system", Content: "You are a helpful assistant."}, {Role: "user", Content: "Say hi."}},
		NextRole:     "user"}
	return promptData(in, Window{Head: 1, Tail: 1}, TextLimits{}.orDefault())
}
