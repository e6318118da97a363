// Package browser drives headless Chromium for the web GUI kind: a Pool of
// browser processes that hands out Pages, each a tab in its own browser
// context, which act as a person would (pointer and keyboard events), take
// screenshots and list the visible elements. It speaks the DevTools
// protocol through chromedp over a pipe.
//
// # Use
//
//	pool, err := browser.NewPool(browser.Options{})   // no browser starts yet
//	defer pool.Close(ctx)
//	page, err := pool.NewPage(ctx, 160, 210)           // viewport = screenshot size
//	defer page.Close(ctx)
//	err = page.Navigate(ctx, "http://127.0.0.1:8080/miniwob/click-test.html")
//	err = page.Click(ctx, 80, 120, "left", 1)
//	png, err := page.Screenshot(ctx)
//	var done bool
//	err = page.Eval(ctx, "WOB_DONE_GLOBAL", &done)
//	els, err := page.Elements(ctx)                     // []gui.Element with refs
//	err = page.ClickElement(ctx, els[0].Ref)
//
// Page implements gui.Screen, so gui.Apply performs an agent's actions on
// it. Coordinates are CSS pixels of the viewport, which are the
// screenshot's pixels (device scale factor 1); the viewport is the whole
// window the page is laid out in, or its top-left corner (The window).
//
// # The pool
//
// Browsers start on demand: a new page goes to the live browser with the
// fewest pages below Options.SessionsPerBrowser (default 4); when all are
// full, a new browser starts, up to Options.MaxBrowsers (default 8); past
// that, pages share the least loaded one. Each page has its own browser
// context, so pages of one process share no cookies, storage or cache.
// The binary is Options.ExecPath (default /usr/bin/chromium-headless-shell,
// Debian's chromium-headless-shell; a one-line launcher script such as
// Debian's is resolved to the binary it runs, so that no shell stands
// between the pool and the browser). Flags: headless, no GPU, no
// background work or throttling, no smooth scrolling, hidden scrollbars,
// muted audio, no network beyond loopback (host resolver rules), and
// --no-sandbox under bwrap (below) or as root, where Chromium's own
// sandbox cannot work; Options.Flags adds more.
//
// # The sandbox
//
// With Options.Sandbox "bwrap" (and "auto", the default, wherever bwrap
// works; web-v1's setting "web.sandbox") every process of a browser runs
// confined (package envs/gui/internal/confine): bwrap starts the browser,
// and its helpers (zygote, renderers, utility processes) are its
// children inside. What they see is exactly:
//
//   - the host's system directories read-only: /usr, /bin, /sbin, /lib*,
//     /etc and /opt (the browser, its libraries, fonts, configuration),
//     with the host's secrets (/etc/shadow and gshadow, SSH host keys, TLS
//     private keys, docker's and kubernetes' configuration) and
//     Options.Hide (the gym setting "sandbox.hide": the served task
//     folders, the store) masked; of /var only dpkg's database and the
//     font caches, and an empty /var/tmp (bwrap.SystemArgs);
//   - the browser's own profile directory (--user-data-dir), writable, at
//     its host path, which is also its HOME and working directory: not
//     the other browsers' profiles;
//   - its own /proc (/proc/sys read-only), a minimal /dev with /dev/shm,
//     and empty /tmp and /run;
//
// and nothing else: not the host's /root or /home, the project's
// checkout, /run with the docker socket, /var/lib/docker, or the server's
// state (a file: URL of any of them finds nothing). The root is
// read-only. The processes run as uid and gid 1000 in a user namespace of
// their own (the server's user outside), with no capabilities and no new
// privileges, unable to make further user namespaces where bwrap 0.8 and
// the kernel allow that, in new PID, IPC, UTS and cgroup namespaces and a
// session of their own, with a clean environment (HOME, PATH, TMPDIR,
// LANG: not the server's), and die with the pool's process. They share the host's network namespace, so that
// pages load from the env's server on loopback (DevTools itself runs over
// a pipe, which passes through bwrap, and opens no port); what listens on
// the host's loopback, or on its abstract unix sockets, is reachable by
// the pages the browser loads, which are the env's own.
//
// With "none" the browser runs UNSANDBOXED, as the server's user (root,
// if the server is root), reading every file that user can, with the
// server's environment; "auto" falls back to it, with a warning, only
// where bwrap cannot run.
//
// A browser that dies (its process killed or crashed: the DevTools pipe
// closes) is dropped from the pool and its process group and profile are
// collected. Its pages' operations then fail with gym.InfraFault
// "browser_crashed" (a crashed tab: "page_crashed"; a pool that is closing:
// "browser_closed"; any other browser error: "browser_error"), and new
// pages go to another browser. An operation whose ctx ends returns the
// ctx's error. ErrUnknownRef (ClickElement) and ErrBadKey (Key) are the
// caller's mistakes and carry no fault label.
//
// # Leases and reaping
//
// Every browser runs with --user-data-dir=<Dir>/<owner>/b<n> (Dir defaults
// to <temp>/nextstate-browsers), where the owner is a lease on the process
// that made the pool (sandbox.NewOwnerID, as sandboxes use), in its own
// process group, and is killed with the process that started it
// (Pdeathsig). Under bwrap the process the pool starts (and PIDs lists)
// is bwrap, whose command line carries the same flag; killing it ends
// the browser's whole PID namespace. NewPool first runs Reap: it kills
// the browsers (their process groups, bwrap's too) and removes the
// profiles of every owner whose process has ended, so what a crashed
// server left is collected when the next one starts. Close kills every
// browser's process group and removes the profiles and the owner
// directory. Leftovers lists what is left of this
// process's pools, for leak checks after tests.
//
// # Pages
//
// Mouse actions move the pointer first, then press and release with click
// counts (a double click fires click, click, dblclick); a drag presses,
// moves in ten steps and releases. Typing sends a key press per character
// (keydown, keypress, input, keyup; a newline is Enter), and inserts text
// that no US key types as an input method would. Key takes a combination
// such as "Enter", "ctrl+a", "shift+Tab" or "ctrl+shift+ArrowLeft"
// (modifiers ctrl, shift, alt, meta; names as DOM keys or xdotool spell
// them, case-insensitive; a single character is the key that types it).
// Scroll sends a mouse wheel event and waits for the scrolled frame. A
// screenshot taken after an action shows what the action changed. The
// text caret does not blink, so a screenshot does not depend on when it
// is taken. JavaScript dialogs (alert, confirm, prompt, beforeunload) are
// accepted as they open, so they block nothing.
//
// Elements lists every visible element with a non-empty box that meets
// the viewport and is interactive (a, button, input, select, option,
// textarea, label, summary, or with onclick, role, tabindex, draggable or
// contenteditable) or holds text of its own: ref, tag, id, classes, input
// type, name, text (innerText, at most 200 characters), value, placeholder,
// href, checked, selected, disabled, and the box clipped to the viewport.
// Refs are kept in a data-ns-ref attribute, stable while the document
// lives. Options of a drop-down select are listed with their select's box;
// ClickElement chooses such an option (the select takes its value, input
// and change fire), and clicks any other element at its centre with the
// mouse after scrolling it into view. ElementsExpr is the script, for
// callers that read more page state in the same evaluation.
//
// # The window
//
// A page is laid out in a window of the viewport's size, or with
// SetWindow in a larger window whose top-left corner is the viewport:
// the screenshot is that corner (where the window is scrolled to), action
// coordinates are the viewport's, the element list holds what meets it,
// and ClickElement scrolls an element into it. MiniWoB++ runs its tasks
// so (a 500×320 window, the 160×210 task its top-left corner), and its
// pages are laid out for that window.
//
// A Pool is safe for concurrent use. A Page's methods are called from one
// goroutine at a time, except Close.
package browser
