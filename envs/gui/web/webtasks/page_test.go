package webtasks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/gui"
	"github.com/nextstate-rl/nextstate/envs/gui/browser"
	"github.com/nextstate-rl/nextstate/envs/gui/web"
	"github.com/nextstate-rl/nextstate/envs/gui/web/webtasks"
)

// The pages in a browser, driven by hand (no env kind): the contract
// core.js implements, each page's determinism, and its layout.

// openPages serves FS and returns a function that opens a task's page in
// a fresh tab of a browser that is closed when the test ends; it skips the
// test when there is no browser.
func openPages(t *testing.T) func(task webtasks.Task) *browser.Page {
	t.Helper()
	if err := browser.Available(""); err != nil {
		t.Skipf("no browser: %v", err)
	}
	pool, err := browser.NewPool(browser.Options{MaxBrowsers: 1, SessionsPerBrowser: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := pool.Close(ctx); err != nil {
			t.Errorf("closing the browser pool: %v", err)
		}
	})
	srv := httptest.NewServer(http.FileServer(http.FS(webtasks.FS)))
	t.Cleanup(srv.Close)
	return func(task webtasks.Task) *browser.Page {
		t.Helper()
		p, err := pool.NewPage(t.Context(), task.Width, task.Height)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close(context.Background()) })
		if err := p.Navigate(t.Context(), srv.URL+"/"+task.Page()); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

func eval[T any](t *testing.T, p *browser.Page, expr string) T {
	t.Helper()
	var v T
	if err := p.Eval(t.Context(), expr, &v); err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

type wob struct {
	Done    bool    `json:"done"`
	Reward  float64 `json:"reward"`
	Raw     float64 `json:"raw"`
	Reason  string  `json:"reason"` // "" for null
	Episode int     `json:"episode"`
	Cover   string  `json:"cover"`
}

const readWOB = `({done: WOB_DONE_GLOBAL, reward: WOB_REWARD_GLOBAL, raw: WOB_RAW_REWARD_GLOBAL,
  reason: WOB_REWARD_REASON, episode: WOB_EPISODE_ID,
  cover: document.getElementById('sync-task-cover').style.display})`

func TestCoreContract(t *testing.T) {
	open := openPages(t)
	task, _ := webtasks.Lookup("click-button")
	p := open(task)

	// Math.seedrandom: the same seed (number or string) gives the same
	// numbers, in [0, 1); another seed other numbers.
	draw := `(s => { Math.seedrandom(s); const a = []; for (let i = 0; i < 64; i++) a.push(Math.random()); return a; })`
	a := eval[[]float64](t, p, draw+"(7)")
	b := eval[[]float64](t, p, draw+"('7')")
	c := eval[[]float64](t, p, draw+"(8)")
	same := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seeds 7 and '7' part at draw %d: %v, %v", i, a[i], b[i])
		}
		if a[i] < 0 || a[i] >= 1 {
			t.Fatalf("draw %d is %v, outside [0, 1)", i, a[i])
		}
		if a[i] == c[i] {
			same++
		}
	}
	if same > 0 {
		t.Errorf("seeds 7 and 8 share %d of 64 draws", same)
	}
	if s := eval[string](t, p, "Math.seedrandom()"); len(s) < 6 {
		t.Errorf("Math.seedrandom() returned %q, want the seed it drew", s)
	}

	// Before the first episode the cover shows and nothing is done.
	if w := eval[wob](t, p, readWOB); w.Done || w.Cover != "block" || w.Episode != 0 {
		t.Errorf("before the first episode: %+v", w)
	}
	// startEpisodeReal builds the problem and hides the cover. (The time
	// limits here are far beyond the test's work, or the test holds
	// Date.now, or it waits for the end: no check races the page's clock.)
	utter := eval[string](t, p, farLimit+"Math.seedrandom(3); core.startEpisodeReal(); core.getUtterance()")
	if utter == "" || utter != eval[string](t, p, "document.getElementById('query').textContent.replace(/\\s+/g, ' ').trim()") {
		t.Errorf("utterance %q does not match #query", utter)
	}
	if w := eval[wob](t, p, readWOB); w.Done || w.Cover != "none" || w.Reason != "" {
		t.Errorf("during an episode: %+v", w)
	}
	// A success 250 ms into a 1 s episode is worth 1 raw and at most 0.75.
	w := eval[wob](t, p, `(() => {
      const now = Date.now, t0 = now();
      Date.now = () => t0;
      try { core.EPISODE_MAX_TIME = 1000; core.episodeStart = t0 - 250; core.endEpisode(1, true, 'ok'); } finally { Date.now = now; }
      return `+readWOB+`; })()`)
	if !w.Done || w.Raw != 1 || w.Reward <= 0 || w.Reward > 0.75 || w.Reason != "ok" || w.Episode != 1 || w.Cover != "block" {
		t.Errorf("after endEpisode(1, true, 'ok') at a quarter of the time: %+v", w)
	}
	// Only the first end counts.
	if w2 := eval[wob](t, p, "core.endEpisode(-1, false, 'late'); "+readWOB); w2 != w {
		t.Errorf("a second endEpisode changed the globals: %+v, was %+v", w2, w)
	}
	// A failure is not discounted.
	w = eval[wob](t, p, "core.EPISODE_MAX_TIME = 30000; core.startEpisodeReal(); core.endEpisode(-1, false, 'no'); "+readWOB)
	if w.Raw != -1 || w.Reward != -1 || w.Episode != 2 {
		t.Errorf("after endEpisode(-1, false): %+v", w)
	}
	// Time running out ends the episode with -1.
	w = eval[wob](t, p, `core.EPISODE_MAX_TIME = 100; core.startEpisodeReal();
      new Promise(resolve => { const poll = () => WOB_DONE_GLOBAL ? resolve(`+readWOB+`) : setTimeout(poll, 20); poll(); })`)
	if !w.Done || w.Raw != -1 || w.Reward != -1 || w.Reason != "timed out" {
		t.Errorf("after the time limit: %+v", w)
	}
	// A new episode resets the globals.
	if w := eval[wob](t, p, "core.EPISODE_MAX_TIME = 30000; core.startEpisodeReal(); "+readWOB); w.Done || w.Raw != 0 || w.Reward != 0 || w.Reason != "" {
		t.Errorf("a new episode kept the last one's globals: %+v", w)
	}
}

// farLimit sets a page's time limit far beyond a test's work, so that no
// test races the page's clock on a loaded machine (web-v1's tests set the
// setting web.episode_ms to the same).
var farLimit = fmt.Sprintf("core.EPISODE_MAX_TIME = %d; ", web.MaxEpisodeMS)

// problemScript starts an episode with a seed and returns its instruction
// and the text of #area.
const problemScript = `(seed => { Math.seedrandom(seed); core.startEpisodeReal();
  return {utterance: core.getUtterance(), area: document.getElementById('area').innerText}; })(%d)`

// layoutScript lists what does not fit the frame: the instruction
// overflowing #query, and visible elements of #area outside #wrap that no
// scrolling box of the page clips.
const layoutScript = `(() => {
  const bad = [];
  const q = document.getElementById('query');
  if (q.scrollHeight > q.clientHeight + 1) bad.push('the instruction overflows #query');
  const wrap = document.getElementById('wrap').getBoundingClientRect();
  for (const el of document.querySelectorAll('#area *')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || !el.checkVisibility()) continue;
    let clipped = false;
    for (let p = el.parentElement; p && p.id !== 'area'; p = p.parentElement) {
      const o = getComputedStyle(p).overflowY;
      if (o === 'auto' || o === 'scroll') clipped = true;
    }
    if (clipped) continue;
    if (r.left < wrap.left - 0.5 || r.top < wrap.top - 0.5 || r.right > wrap.right + 0.5 || r.bottom > wrap.bottom + 0.5) {
      bad.push(el.tagName.toLowerCase() + ' "' + el.innerText.slice(0, 20) + '" at ' +
        [r.left, r.top, r.right, r.bottom].map(Math.round).join(','));
    }
  }
  return bad;
})()`

type problem struct {
	Utterance string `json:"utterance"`
	Area      string `json:"area"`
}

// Every page: the same seed builds the same problem, different seeds
// different ones, and everything fits the 160x210 frame.
func TestPagesDeterministicAndInFrame(t *testing.T) {
	open := openPages(t)
	const seeds = 20
	varied := 0
	for _, task := range webtasks.Tasks() {
		t.Run(task.Name, func(t *testing.T) {
			p := open(task)
			utterances, problems := map[string]bool{}, map[problem]bool{}
			for seed := 1; seed <= seeds; seed++ {
				pr := eval[problem](t, p, fmt.Sprintf(problemScript, seed))
				if pr.Utterance == "" {
					t.Fatalf("seed %d: no instruction", seed)
				}
				if bad := eval[[]string](t, p, layoutScript); len(bad) > 0 {
					t.Errorf("seed %d (%q): outside the frame: %v", seed, pr.Utterance, bad)
				}
				if again := eval[problem](t, p, fmt.Sprintf(problemScript, seed)); again != pr {
					t.Fatalf("seed %d gave two problems:\n%+v\n%+v", seed, pr, again)
				}
				utterances[pr.Utterance] = true
				problems[pr] = true
			}
			if len(problems) < seeds/2 {
				t.Errorf("%d seeds gave only %d different problems", seeds, len(problems))
			}
			if len(utterances) >= seeds/2 {
				varied++
			}
		})
	}
	// copy-text's instruction names only the kind of code; the rest vary.
	if varied < len(webtasks.Tasks())-1 {
		t.Errorf("only %d of %d tasks vary their instruction with the seed", varied, len(webtasks.Tasks()))
	}
}

// drive plays a policy on an open page, from a fresh episode of seed with
// a time limit far beyond its work, as a kind would: list the elements,
// act, read the globals, until the episode ends, the policy says done, or
// the task's step limit. It returns the globals and the instruction.
func drive(t *testing.T, p *browser.Page, task webtasks.Task, seed int, play policy) (wob, string) {
	t.Helper()
	instr := eval[string](t, p, farLimit+fmt.Sprintf("Math.seedrandom(%d); core.startEpisodeReal(); core.getUtterance()", seed))
	var w wob
	for step := 0; step < task.MaxSteps; step++ {
		els, err := p.Elements(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		a, err := play(instr, els)
		if err != nil {
			t.Fatalf("seed %d (%q), step %d: %v", seed, instr, step, err)
		}
		if a.Action == "done" {
			break
		}
		if a.Action == "click_element" {
			err = p.ClickElement(t.Context(), a.Ref)
		} else {
			err = gui.Apply(t.Context(), p, a)
		}
		if err != nil {
			t.Fatalf("seed %d, step %d: %+v: %v", seed, step, a, err)
		}
		if w = eval[wob](t, p, readWOB); w.Done {
			break
		}
	}
	return w, instr
}

// The oracles on the pages alone, over more seeds than the kind's test.
func TestOraclesOnPages(t *testing.T) {
	open := openPages(t)
	for _, task := range webtasks.Tasks() {
		t.Run(task.Name, func(t *testing.T) {
			p := open(task)
			for seed := 6; seed <= 10; seed++ {
				o, _ := webtasks.NewOracle(task.Name)
				w, instr := drive(t, p, task, seed, o)
				if !w.Done || w.Raw != 1 || w.Reward <= 0 {
					t.Errorf("seed %d (%q): %+v, want raw reward 1", seed, instr, w)
				}
			}
		})
	}
}

// Wrong play on the pages alone.
func TestWrongPlayOnPages(t *testing.T) {
	open := openPages(t)
	covered := map[string]bool{}
	for _, c := range wrongCases {
		covered[c.task] = true
		task, ok := webtasks.Lookup(c.task)
		if !ok {
			t.Fatalf("wrong case for unknown task %q", c.task)
		}
		t.Run(c.task+"/"+c.name, func(t *testing.T) {
			p := open(task)
			for seed := 1; seed <= 3; seed++ {
				w, instr := drive(t, p, task, seed, c.play())
				if w.Done != c.ends || w.Raw != c.raw {
					t.Errorf("seed %d (%q): %+v, want done %v and raw reward %v", seed, instr, w, c.ends, c.raw)
				}
			}
		})
	}
	for _, task := range webtasks.Tasks() {
		if !covered[task.Name] {
			t.Errorf("task %s has no wrong play", task.Name)
		}
	}
}
