package web

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/envs/gui"
	"github.com/nextstate-rl/nextstate/envs/gui/browser"
	"github.com/nextstate-rl/nextstate/gym"
)

// Info keys of web-v1 observations.
const (
	infoInstruction = "instruction"
	infoURL         = "url"
	infoTitle       = "title"
	infoRawReward   = "raw_reward"
	infoDiscounted  = "discounted_reward"
	infoReason      = "reward_reason"
	infoError       = "error"
	infoErrorReason = "error_reason"
	infoEndedBy     = "ended_by"
)

// timeGrace is how long past the page's time limit the env waits for the
// page's own timer before it cuts the episode off itself.
const timeGrace = time.Second

// Env is one web-v1 environment: a browser page, reused across episodes.
type Env struct {
	inst *instance // the Manager's web-v1
	cfg  config
	pool *browser.Pool
	srv  *server
	page *browser.Page

	// The episode.
	task        *gym.Task
	grid        bool
	elements    bool
	discounted  bool
	episodeMS   int // the page's time limit override; 0 keeps the page's
	instruction string
	maxTime     time.Duration
	started     time.Time
}

// state is what the page says after an action.
type state struct {
	Done     bool          `json:"done"`
	Raw      float64       `json:"raw"`
	Reward   float64       `json:"reward"`
	Reason   *string       `json:"reason"`
	URL      string        `json:"url"`
	Title    string        `json:"title"`
	Elements []gui.Element `json:"elements"`
}

// stateExpr reads the MiniWoB++ globals (absent ones read as not done,
// reward 0), the address and the title.
const stateExpr = `({
  done: window.WOB_DONE_GLOBAL === true,
  raw: typeof window.WOB_RAW_REWARD_GLOBAL === 'number' ? window.WOB_RAW_REWARD_GLOBAL : 0,
  reward: typeof window.WOB_REWARD_GLOBAL === 'number' ? window.WOB_REWARD_GLOBAL : 0,
  reason: window.WOB_REWARD_REASON == null ? null : String(window.WOB_REWARD_REASON),
  url: location.href,
  title: document.title,
  elements: %s
})`

// stateScript reads the page's state, with the element list of a w×h
// viewport when elements is set.
func stateScript(elements bool, w, h int) string {
	if !elements {
		return stateNoElements
	}
	return fmt.Sprintf(stateExpr, "\n"+browser.ElementsExpr(w, h)+"\n")
}

var stateNoElements = fmt.Sprintf(stateExpr, "null")

// startScript seeds the page and starts the episode; %s are the seed and
// the time limit override (or null).
const startScript = `(() => {
  if (typeof core === 'undefined' || typeof core.startEpisodeReal !== 'function' || typeof Math.seedrandom !== 'function') {
    return {error: 'the page does not follow the MiniWoB++ contract: it has no core.startEpisodeReal or Math.seedrandom (does it load ../core/core.js?)'};
  }
  Math.seedrandom(%s);
  const max = %s;
  if (max !== null) core.EPISODE_MAX_TIME = max;
  core.startEpisodeReal();
  const u = typeof core.getUtterance === 'function' ? core.getUtterance() : null;
  let text = typeof u === 'string' ? u : (u && typeof u.utterance === 'string' ? u.utterance : '');
  if (!text) {
    const q = document.getElementById('query');
    text = q ? q.textContent : '';
  }
  return {instruction: text.replace(/\s+/g, ' ').trim(), max: Number(core.EPISODE_MAX_TIME) || 10000};
})()`

// Reset implements gym.Env: it opens the task's page (a fresh document
// each episode, in the env's own browser context), seeds it with
// Math.seedrandom(seed), starts the episode with core.startEpisodeReal()
// and reads the instruction from core.getUtterance().
//
// Options: "coords": "pixels" (default) or "grid"; "elements": true lists
// the visible elements; "reward": "raw" (default) or "discounted";
// "episode_ms": the page's time limit in ms (overrides its
// core.EPISODE_MAX_TIME).
func (e *Env) Reset(ctx context.Context, task *gym.Task, seed int64, opts gym.Options) (gym.Observation, gym.Info, error) {
	if err := e.options(opts); err != nil {
		return gym.Observation{}, nil, err
	}
	d, err := taskData(task)
	if err != nil {
		return gym.Observation{}, nil, err
	}
	if e.pool == nil {
		if e.pool, e.srv, err = e.inst.resources(); err != nil {
			return gym.Observation{}, nil, err
		}
	}
	if err := e.openPage(ctx, d); err != nil {
		return gym.Observation{}, nil, err
	}
	dir := task.Dir
	if dir == "" {
		dir = e.cfg.miniwobDir
	}
	if err := e.page.Navigate(ctx, e.srv.url(dir, d.Page)); err != nil {
		return gym.Observation{}, nil, err
	}
	maxMS := "null"
	if e.episodeMS > 0 {
		maxMS = strconv.Itoa(e.episodeMS)
	}
	var start struct {
		Error       string
		Instruction string
		Max         float64
	}
	if err := e.page.Eval(ctx, fmt.Sprintf(startScript, strconv.FormatInt(seed, 10), maxMS), &start); err != nil {
		var fe *gym.FaultError
		if errors.As(err, &fe) || ctx.Err() != nil {
			return gym.Observation{}, nil, err
		}
		return gym.Observation{}, nil, gym.InfraFault("bad_task", fmt.Errorf("web-v1 task %s: starting the episode: %w", task.ID, err))
	}
	if start.Error != "" {
		return gym.Observation{}, nil, gym.InfraFault("bad_task", fmt.Errorf("web-v1 task %s (%s): %s", task.ID, d.Page, start.Error))
	}
	e.task, e.instruction = task, start.Instruction
	e.maxTime = time.Duration(start.Max * float64(time.Millisecond))
	e.started = time.Now()
	obs, st, err := e.observe(ctx, "")
	if err != nil {
		return gym.Observation{}, nil, err
	}
	info := e.info(st)
	info[gym.InfoTools] = []any{gui.Tool()}
	info["coords"] = map[bool]string{false: "pixels", true: "grid"}[e.grid]
	info["viewport"] = map[string]int{"width": d.Width, "height": d.Height}
	info["window"] = map[string]int{"width": d.WindowWidth, "height": d.WindowHeight}
	info["episode_ms"] = e.maxTime.Milliseconds()
	return obs, info, nil
}

// options reads the reset options; the time limit override is the
// reset option's, else the setting's.
func (e *Env) options(opts gym.Options) error {
	bad := func(format string, args ...any) error {
		return gym.AgentFault("bad_option", fmt.Errorf("web-v1: "+format, args...))
	}
	e.grid, e.elements, e.discounted, e.episodeMS = false, false, false, e.cfg.episodeMS
	for k, v := range opts {
		switch k {
		case "coords":
			switch v {
			case "pixels", "":
			case "grid":
				e.grid = true
			default:
				return bad(`reset option "coords" is %v; want "pixels" or "grid"`, v)
			}
		case "elements":
			b, ok := v.(bool)
			if !ok {
				return bad(`reset option "elements" is %v; want true or false`, v)
			}
			e.elements = b
		case "reward":
			switch v {
			case "raw", "":
			case "discounted":
				e.discounted = true
			default:
				return bad(`reset option "reward" is %v; want "raw" or "discounted"`, v)
			}
		case "episode_ms":
			f, ok := v.(float64)
			if n, isInt := v.(int); isInt {
				f, ok = float64(n), true
			}
			if !ok || f != float64(int(f)) || f < 1000 || f > MaxEpisodeMS {
				return bad(`reset option "episode_ms" is %v; want a whole number of milliseconds from 1000 to %d`, v, MaxEpisodeMS)
			}
			e.episodeMS = int(f)
		default:
			return bad(`unknown reset option %q; the options are "coords", "elements", "reward" and "episode_ms"`, k)
		}
	}
	return nil
}

// openPage makes sure the env has a live page of the task's viewport, in
// its window.
func (e *Env) openPage(ctx context.Context, d TaskData) error {
	if e.page != nil {
		if err := e.page.SetWindow(ctx, d.Width, d.Height, d.WindowWidth, d.WindowHeight); err == nil {
			return nil
		} else if ctx.Err() != nil {
			return err
		}
		// The browser died between episodes: a new page, in a new browser.
		e.page.Close(ctx)
		e.page = nil
	}
	p, err := e.pool.NewPage(ctx, d.Width, d.Height)
	if err != nil {
		return err
	}
	e.page = p
	if d.WindowWidth != d.Width || d.WindowHeight != d.Height {
		return p.SetWindow(ctx, d.Width, d.Height, d.WindowWidth, d.WindowHeight)
	}
	return nil
}

// Step implements gym.Env. Before acting it checks that the page has not
// ended the episode meanwhile (its clock runs while the agent thinks): if
// it has, the action is not applied and the step ends the episode with the
// page's reward. An agent's mistake (a malformed action, a point off the
// screen, an unknown ref or key) is not applied either; the observation
// carries it as info "error" and a text part, and the episode goes on.
func (e *Env) Step(ctx context.Context, a gym.Action) (gym.Transition, error) {
	if e.task == nil {
		return gym.Transition{}, gym.InfraFault("no_episode", errors.New("web-v1: step before a reset"))
	}
	var pre state
	if err := e.page.Eval(ctx, stateNoElements, &pre); err != nil {
		return gym.Transition{}, err
	}
	if pre.Done {
		return e.transition(ctx, "", "page")
	}
	if time.Since(e.started) > e.maxTime+timeGrace {
		// The page's timer should have ended the episode by now.
		tr, err := e.transition(ctx, "", "")
		if err == nil && !tr.Terminated {
			tr.Truncated = true
			tr.Info["truncated_by"] = "page_time_limit"
		}
		return tr, err
	}
	g, err := gui.ParseAction(a)
	if err != nil {
		return e.transition(ctx, mistake(err), "")
	}
	w, h := e.page.Size()
	if e.grid {
		g = gui.ToPixels(g, w, h)
	}
	if err := gui.InBounds(g, w, h); err != nil {
		return e.transition(ctx, mistake(err), "")
	}
	switch g.Action {
	case "done":
		return e.transition(ctx, "", "agent")
	case "wait":
		t := time.NewTimer(time.Duration(g.Ms) * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return gym.Transition{}, ctx.Err()
		}
	case "click_element":
		err = e.page.ClickElement(ctx, g.Ref)
	default:
		err = gui.Apply(ctx, e.page, g)
	}
	if errors.Is(err, browser.ErrUnknownRef) || errors.Is(err, browser.ErrBadKey) {
		return e.transition(ctx, mistake(gym.AgentFault("bad_action", err)), "")
	}
	if err != nil {
		return gym.Transition{}, err
	}
	return e.transition(ctx, "", "")
}

// mistake is the message of an agent's recoverable error, without the
// fault label.
func mistake(err error) string {
	var fe *gym.FaultError
	if errors.As(err, &fe) {
		err = fe.Err
	}
	return strings.TrimPrefix(err.Error(), "browser: ")
}

// transition observes the page after an action; endedBy "agent" is the
// agent's done, "page" a page that had ended before the action.
func (e *Env) transition(ctx context.Context, errMsg, endedBy string) (gym.Transition, error) {
	obs, st, err := e.observe(ctx, errMsg)
	if err != nil {
		return gym.Transition{}, err
	}
	tr := gym.Transition{Observation: obs, Info: e.info(st)}
	if errMsg != "" {
		tr.Info[infoError] = errMsg
		tr.Info[infoErrorReason] = "bad_action"
	}
	if st.Done || endedBy == "agent" {
		tr.Terminated = true
		tr.Reward = st.Raw
		if e.discounted {
			tr.Reward = st.Reward
		}
		if !st.Done {
			tr.Reward = 0 // the page did not end: done before finishing
		}
		if endedBy == "" {
			endedBy = "page"
		}
		tr.Info[infoEndedBy] = endedBy
	}
	return tr, nil
}

// observe reads the page's state and takes the screenshot.
func (e *Env) observe(ctx context.Context, errMsg string) (gym.Observation, state, error) {
	var st state
	w, h := e.page.Size()
	if err := e.page.Eval(ctx, stateScript(e.elements, w, h), &st); err != nil {
		return gym.Observation{}, st, err
	}
	png, err := e.page.Screenshot(ctx)
	if err != nil {
		return gym.Observation{}, st, err
	}
	parts := []gym.Part{
		{Type: gym.PartImage, Image: &gym.Blob{MIME: "image/png", Data: png, Size: int64(len(png)), Width: w, Height: h}},
		gym.TextPart(e.instruction),
	}
	if e.elements {
		if st.Elements == nil {
			st.Elements = []gui.Element{}
		}
		parts = append(parts, gym.TextPart(elementsText(st.Elements, e.grid, w, h)))
	}
	if errMsg != "" {
		parts = append(parts, gym.TextPart("error: "+errMsg))
	}
	return gym.Observation{Parts: parts}, st, nil
}

func (e *Env) info(st state) gym.Info {
	info := gym.Info{
		infoInstruction: e.instruction,
		infoURL:         st.URL,
		infoTitle:       st.Title,
		infoRawReward:   st.Raw,
		infoDiscounted:  st.Reward,
	}
	if st.Reason != nil {
		info[infoReason] = *st.Reason
	}
	if e.elements {
		info[gui.InfoElements] = st.Elements
	}
	return info
}

// elementsText lists elements one a line: [ref] tag "text" attributes
// (x,y,w,h); boxes are in the session's coordinates (the 0..999 grid for a
// grid session).
func elementsText(els []gui.Element, grid bool, w, h int) string {
	var b strings.Builder
	if grid {
		b.WriteString("Elements (box x,y,w,h on the 0..999 grid):")
	} else {
		b.WriteString("Elements (box x,y,w,h in screenshot pixels):")
	}
	if len(els) == 0 {
		b.WriteString(" none")
	}
	for _, el := range els {
		x, y, ew, eh := el.X, el.Y, el.W, el.H
		if grid {
			x, y = x*gui.GridSize/w, y*gui.GridSize/h
			ew, eh = max(1, ew*gui.GridSize/w), max(1, eh*gui.GridSize/h)
		}
		fmt.Fprintf(&b, "\n[%s] %s", el.Ref, el.Tag)
		if el.Type != "" {
			fmt.Fprintf(&b, " type=%s", el.Type)
		}
		if el.ID != "" {
			fmt.Fprintf(&b, " #%s", el.ID)
		}
		if el.Text != "" {
			fmt.Fprintf(&b, " %q", el.Text)
		}
		if el.Value != "" {
			fmt.Fprintf(&b, " value=%q", el.Value)
		}
		if el.Placeholder != "" {
			fmt.Fprintf(&b, " placeholder=%q", el.Placeholder)
		}
		if el.Href != "" {
			fmt.Fprintf(&b, " href=%q", el.Href)
		}
		for _, f := range []struct {
			on   bool
			name string
		}{{el.Checked, "checked"}, {el.Selected, "selected"}, {el.Disabled, "disabled"}} {
			if f.on {
				b.WriteString(" " + f.name)
			}
		}
		fmt.Fprintf(&b, " (%d,%d,%d,%d)", x, y, ew, eh)
	}
	return b.String()
}

// Close implements gym.Env: it closes the page and its browser context.
func (e *Env) Close(ctx context.Context) error {
	if e.page == nil {
		return nil
	}
	p := e.page
	e.page = nil
	return p.Close(ctx)
}
