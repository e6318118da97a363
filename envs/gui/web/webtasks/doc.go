// Package webtasks is nextstate's own suite of web tasks for the web-v1
// kind (package envs/gui/web): eighteen small pages that follow MiniWoB++'s
// reward contract, so the kind drives them exactly as it drives the real
// MiniWoB++ suite, and a scripted oracle per task that solves it. The
// project cannot ship MiniWoB++'s files; these pages, their core script and
// their wording are written from scratch.
//
// # Layout
//
// FS is laid out like MiniWoB++'s html/ folder, and is served over HTTP
// from its root:
//
//	core/core.js           the contract below, seeded randomness, word lists, DOM helpers
//	core/core.css          the 160x210 task frame
//	miniwob/<name>.html    one page per task; it loads ../core/core.js
//
// Each page holds <div id="wrap"><div id="query"></div><div id="area"></div></div>:
// #wrap is the 160x210-pixel frame (Task.Width, Task.Height), #query the
// instruction (50 px, yellow), #area the task (160 px).
//
// # The contract core.js implements
//
// A page defines a global genProblem() that builds one episode inside #area
// and writes the instruction into #query; on load it calls
// core.startEpisode(), which shows a cover (#sync-task-cover, "START").
// A host then runs an episode so:
//
//  1. Math.seedrandom(seed) replaces Math.random with a generator
//     determined by String(seed) (FNV-1a hashed into the state of a
//     xoshiro128** generator). Every random choice of a page goes through
//     Math.random (core.randi, core.randf, core.sample, core.shuffle,
//     core.pick), so the same seed builds the same problem.
//  2. core.startEpisodeReal() resets the globals, calls genProblem(),
//     hides the cover and starts the clock: after core.EPISODE_MAX_TIME ms
//     (10000 by default; each page sets its own, 30 to 60 s) the episode
//     ends with core.endEpisode(-1, false, "timed out").
//  3. core.getUtterance() is the instruction: #query's text with its
//     white space collapsed.
//  4. After every action the host reads the globals WOB_DONE_GLOBAL (the
//     episode has ended), WOB_RAW_REWARD_GLOBAL (the reward the page
//     gave), WOB_REWARD_GLOBAL (that reward, discounted by time when the
//     page asked) and WOB_REWARD_REASON (a short text saying why).
//
// core.endEpisode(reward, timeProportional, reason) ends the episode; only
// its first call in an episode counts. With timeProportional the reward is
// scaled by max(0, 1 - elapsed/EPISODE_MAX_TIME). The pages end an episode
// with core.succeed(reason) (1, discounted by time) or core.fail(reason)
// (-1, not discounted), as MiniWoB++'s own tasks do; an action that is not
// final (ticking a box, opening a tab, scrolling, a drop outside every
// zone) ends nothing and leaves the reward at 0. The end of an episode
// shows the cover again, and WOB_EPISODE_ID counts ended episodes.
//
// # The tasks
//
// Tasks lists them with their step limits; all use the 160x210 frame.
//
//	click-button         click the button with the given label
//	click-link           click a link; its word also appears as plain text
//	click-checkboxes     tick exactly the named boxes (some start ticked), Submit
//	choose-radio         choose the named radio button (another is preselected), Submit
//	click-tab            find a button on one of three or four tabs and click it
//	double-click         double-click the named tile; a single click only selects
//	right-click-menu     right-click a file, choose an action from its context menu
//	enter-text           type a word into a box, Submit
//	copy-text            copy a code shown on the page (not in the instruction), Submit
//	enter-date           write a date given in words as MM/DD/YYYY, Submit
//	login-form           username and password, Enter or "Log in"
//	choose-dropdown      select an option of a <select>, Submit
//	search-select        type into a search box, click the right one of similar results
//	toggle-switch        set named On/Off switches, leave the rest, Save
//	slider-set           set a range slider to a value (click, drag or arrow keys), Submit
//	drag-box             drag a square onto the labelled zone (mousedown, mousemove, mouseup)
//	scroll-find          scroll a list to an entry below the fold and click it
//	multi-page-checkout  shop, cart and delivery screens inside one page; place the order
//
// A wrong final action (the wrong button, link, tile, file, zone or result;
// Submit with a wrong or empty value; a wrong order) ends the episode with
// -1. Pages only use mouse and keyboard events a person makes: drag-box
// listens to mousedown, mousemove and mouseup (not HTML5 drag and drop), and
// scroll-find's list scrolls with the mouse wheel.
//
// # Oracles
//
// NewOracle returns a task's scripted policy for one episode. It reads the
// instruction and the element list a web kind sends (gui.Element: visible
// elements with their text, value, checked state and box), finds its target
// by the instruction's words and the page's visible text, and acts as a
// person would: clicks at an element's centre, a click into a field before
// typing, a drag from box to box, the wheel over a list. A <select> is
// focused with a click, then the option's text is typed (a focused select
// picks the option it matches) and Enter confirms. Oracles reach reward 1
// for every seed; the package's tests check it for seeds 1 to 5 through a
// real web-v1 session.
//
// # Adding a task
//
// Write miniwob/<name>.html: load ../core/core.css and ../core/core.js,
// hold #wrap, #query and #area, define genProblem() (build everything from
// core's random helpers, empty #area first since it runs once per episode,
// set core.EPISODE_MAX_TIME if 10 s is too short, end the episode with
// core.succeed or core.fail), and call core.startEpisode() on load. Keep
// what a person must read visible inside the 160x210 frame and the
// instruction at four lines or fewer. Give things a person tells apart
// their own text, tag or class, and never put the answer in the page where
// a person could not see it. Then add a Task to the list in webtasks.go and
// an oracle to the map in oracle.go; the tests pick both up.
package webtasks
