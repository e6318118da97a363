// Package web is the web-v1 env kind: web pages in headless Chromium
// (package envs/gui/browser) that follow MiniWoB++'s reward contract, so
// the built-in pages (package webtasks) and the real MiniWoB++ suite run
// the same way. Import it for its side effect (cmd/nextstate does): it
// registers the kind with gym, and the "miniwob" suite format with
// gym.RegisterSuiteFormat, so `nextstate serve --tasks DIR` reads a
// MiniWoB++ html/ folder.
//
// # Tasks
//
// A task's Data names a page, the viewport (the screenshot's size) and,
// optionally, the window the page is laid out in:
//
//	{"page": "miniwob/click-test.html", "width": 160, "height": 210,
//	 "window_width": 500, "window_height": 320}
//
// The page is relative to the task's folder: the built-in pages
// (webtasks.FS) for a task with no Dir, or the web.miniwob_dir setting when
// it is set; a task loaded from a folder (Task.Dir) has its own. The
// viewport defaults to MiniWoB++'s 160x210. The page is laid out in a
// window of which the viewport is the top-left corner
// (browser.Page.SetWindow), as MiniWoB++ runs its tasks: its window
// defaults to MiniWoB++'s 500x320, or the viewport where that is larger
// (each way). MiniWoB++'s pages are laid out for that window: in one of
// the viewport's size, a page that places a widget wider than the task
// and then sizes it down (click-dialog's jQuery UI dialog, 300 pixels at
// first, its close button focused) scrolls the window sideways, and the
// task is out of the screenshot and the element list. The screenshot,
// action coordinates and the element list are the viewport's; the agent
// scrolls the window with the scroll action, and click_element scrolls an
// element into the viewport. The built-in tasks are
// "web-<name>" (Spec.Tasks, from webtasks.Tasks). A MiniWoB++ html/ folder
// (miniwob/*.html beside core/core.js; IsMiniWoBDir) loads as one task per
// page, "miniwob-<name>" (LoadMiniWoB). The folder is served over loopback
// HTTP as it is laid out, so a page's ../core/ resolves as in MiniWoB++;
// the browser reaches nothing but loopback.
//
// # The reward contract
//
// Reset opens the page in a fresh document, seeds it with
// Math.seedrandom(seed), starts the episode with core.startEpisodeReal()
// and reads the instruction from core.getUtterance() (#query's text if that
// gives none). After every action the env reads the globals
// WOB_DONE_GLOBAL, WOB_RAW_REWARD_GLOBAL, WOB_REWARD_GLOBAL (discounted by
// time when the page asks) and WOB_REWARD_REASON. The episode terminates
// when WOB_DONE_GLOBAL is true; the reward is the raw reward (1 success, -1
// failure), or with the reset option "reward": "discounted" the discounted
// one. Steps before the end have reward 0.
//
// Time limit: the page's own clock ends the episode after
// core.EPISODE_MAX_TIME ms (MiniWoB++'s default is 10 s) with -1, "timed
// out", also while the agent is thinking. Every step first checks whether
// the page ended the episode meanwhile; if so the step's action is not
// applied (MiniWoB++'s START cover would restart the episode) and the step
// terminates with the page's reward (info "ended_by": "page"). A page whose
// clock failed is cut off by the env one second past its limit (truncated,
// "truncated_by": "page_time_limit"). The reset option "episode_ms" (or the
// setting web.episode_ms) sets the page's limit, from 1000 to 600000 ms,
// for agents that think slower than MiniWoB++'s reflex agents; the
// gym's own step and episode limits hold too (50 steps, 30 s a step,
// 15 min an episode, unless the task says otherwise).
//
// The agent acts only through the browser's input: it cannot run scripts,
// and the reward is read from the page by the env. The "done" action ends
// the episode at once with the reward the page has given, 0 unless the
// page had ended it (info "ended_by": "agent").
//
// # Actions
//
// One action per step: a gym gui_action part, or a call of the "computer"
// tool (gui.Tool) with the same fields: click, double_click, right_click,
// move {x, y}; drag {x, y, to_x, to_y}; type {text}; key {key}; scroll
// {x, y, dx, dy}; wait {ms} (at most 10 s); click_element {ref}; done.
// Coordinates are the screenshot's pixels, or with the reset option
// "coords": "grid" a 0..999 grid over the screenshot (gui.ToPixels).
// click_element takes a ref from the element list and clicks the element's
// centre (browser.Page.ClickElement).
//
// A mistake the agent can recover from is not an error: a malformed
// action (a missing field, an unknown action or tool, arguments that are
// not JSON), a point off the screen, a ref that names no element, a key
// combination that is not one. The action is not applied; the observation
// is the unchanged page with a last text part "error: ...", and the step
// info has "error" (the message) and "error_reason" ("bad_action"). The
// episode goes on, and the step counts against the step limit.
//
// # Observations
//
// The parts: the screenshot (image/png, Width and Height set), the
// instruction (text), with the reset option "elements": true the element
// list (text), one element a line:
//
//	[12] input type=text #name value="Ann" placeholder="Name" (10,60,128,21)
//
// with the box x,y,w,h in the session's coordinates (screenshot pixels, or
// grid units for a grid session), and the mistake's "error: ..." when
// there was one. Info: "instruction", "url", "title", "raw_reward",
// "discounted_reward", "reward_reason" (once the page gave one), and with
// the element list "elements" ([]gui.Element, boxes in screenshot pixels;
// read it with gui.ElementsFrom). The reset info also has "tools" (the
// computer tool in the OpenAI tools shape), "coords", "viewport", "window" and
// "episode_ms" (the page's time limit).
//
// # Settings
//
// Kind implements gym.Configurer. Configure reads "web.sessions_per_browser"
// (pages sharing one browser process, default 4), "web.max_browsers"
// (browser processes, default 8), "web.chromium" (the browser binary,
// default /usr/bin/chromium-headless-shell), "web.miniwob_dir" (a MiniWoB++
// html/ folder whose pages replace the built-in ones; `nextstate serve
// --miniwob-dir DIR` sets it), "web.episode_ms", "web.sandbox" (the
// browser's sandbox: "auto", the default, bwrap wherever it works; "bwrap";
// or "none", unsandboxed; see package browser, The sandbox) and
// "sandbox.hide" (host paths that sandbox masks, a PATH-style list; `nextstate
// serve` sets it). Each Manager's Configure makes an Instance of its own
// (gym.Instance), with its own settings: its browser pool and page server
// start at the Manager's first session, are shared by the Manager's envs
// of the kind, and close at the Manager's Shutdown.
//
// # Whose fault
//
// A browser that crashed or was killed mid-episode fails the step with
// gym.InfraFault "browser_crashed": the session closes and the episode's
// outcome is unknown, not failed; the next session gets a new browser. A
// task whose data or page does not fit (no page, a page that does not
// load core.js) is an InfraFault "bad_task". A bad reset option is the
// agent's: gym.AgentFault "bad_option".
//
// # Oracle
//
// Kind implements gym.OracleKind for the built-in tasks: the oracle is
// webtasks.NewOracle's scripted policy, which reads the instruction and the
// element list, so it implements gym.OracleOptions with {"elements": true}.
//
// An Env is used by one goroutine at a time (its gym.Session's); it keeps
// its page (and browser context) across episodes. Kind is safe for
// concurrent use.
package web
