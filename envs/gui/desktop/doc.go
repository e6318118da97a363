// Package desktop is the desktop-v1 env kind: X11 desktops on Xvfb,
// driven with the same "computer" tool as the browser kind, with tasks in
// the OSWorld manner (setup commands, an app to open, an instruction, and
// an evaluator command that scores the episode after the last action).
// Import it for its side effect; it registers desktop-v1 with package gym.
//
// # Episodes
//
// Each session (Env) has an Xvfb of its own on a display number taken
// from a range, kept across resets while the task's screen size stays.
// Input goes through the XTEST extension and screenshots through
// GetImage, in pure Go over github.com/jezek/xgb; the X connection
// authenticates with a cookie of the display's own (MIT-MAGIC-COOKIE-1),
// which the session's processes get through $XAUTHORITY.
//
// Reset ends the previous episode's processes, brings the display back
// to its first state (no client windows, the pointer in the middle, the
// keyboard mapping and cut buffers restored), empties the home directory,
// runs the task's setup commands, opens its app, and waits until a window
// is up and the screen has been still for ResetQuiet (at most settle_ms).
// Its observation is a text part (the instruction) and an image part (a
// PNG screenshot with its Width and Height). The reset info holds
// "width", "height", "coords", "display", "sandbox" and "tools" (the
// action tool in the OpenAI tools shape).
//
// Reset options: "coords": "pixels" (the default: coordinates are the
// screenshot's pixels) or "grid" (a 0..999 grid over the screenshot,
// mapped by gui.ToPixels). Any other option is an error.
//
// # Actions
//
// A step is one gui_action part or one tool call of the "computer" tool
// (package gui), whose fields are the same. On a desktop:
//
//   - click, double_click, right_click: button 1 (twice), button 3, at x, y;
//   - move: the pointer moves; drag: button 1 pressed at x, y, moved to
//     to_x, to_y in 12 steps, released;
//   - type: each character is a keystroke on the key that carries it (with
//     shift when needed); a character no key carries (é, €, Ω...) is put
//     on a spare keycode first; newline is Return and tab is Tab;
//   - key: a combination of modifiers (ctrl, shift, alt, super; aliases
//     control, option, meta, win, cmd) and one key joined by '+', such as
//     Enter, ctrl+a, shift+Tab, ctrl+shift+t, alt+F4, Page_Down, ctrl++;
//     named keys are X keysym names and common aliases (Return/Enter,
//     Escape/esc, BackSpace, Delete, Home, End, Up, PageUp, F1..F24,
//     space, minus, ...), matched case-insensitively;
//   - scroll: wheel clicks (buttons 4 and 5 for dy, 6 and 7 for dx), one per
//     ScrollStep (100) pixels, at least one, with the pointer at x, y (the
//     middle of the screen when they are not given); how far one click
//     scrolls is the app's business (xterm: five lines);
//   - wait: sleeps ms (at most 10 s) and takes a screenshot;
//   - done: ends the episode (terminated); the evaluator then scores it;
//   - click_element: not available (a desktop has no element list).
//
// There is no window manager: windows appear where their -geometry puts
// them, have no title bars, and keyboard input goes to the window under
// the pointer (the server's default focus, PointerRoot), so an agent
// clicks into a window before typing into it.
//
// After an action the step waits until the screen has not changed for
// StepQuiet (40 ms; at most StepSettle), as the DAMAGE extension reports
// it, and returns one image part: the screenshot. Screenshots are
// incremental: only the strips of rows DAMAGE marked changed are fetched
// and re-encoded (a fast PNG writer with the Sub filter and strips
// deflated in parallel), and an unchanged screen costs a round trip.
//
// The agent's mistakes are observations, not failures: a malformed
// action, a point off the screen, an unknown key name, a control
// character in type's text or click_element are answered with a text part
// "error: <what was wrong and what is accepted>" and the screenshot, and
// info "error" holds a short reason (bad_action, unknown_tool,
// bad_arguments, bad_key, bad_text, no_elements). The step counts; the
// episode goes on.
//
// # Tasks
//
// A task's Data (TaskData) and Verifier (VerifierData), for example:
//
//	{"id": "fix-typo", "env": "desktop-v1",
//	 "instruction": "Correct 'teh' to 'the' in notes.txt and save it with the Save button.",
//	 "data": {"width": 1280, "height": 720,
//	          "setup": ["printf 'teh cat\\n' > notes.txt"],
//	          "app": "xedit -geometry 640x400+0+0 notes.txt",
//	          "settle_ms": 10000},
//	 "verifier": {"evaluator": "[ \"$(cat notes.txt)\" = 'the cat' ]", "timeout": "30s",
//	              "oracle": [{"action": "click", "x": 41, "y": 118}, ..., {"action": "done"}]},
//	 "limits": {"max_steps": 20}}
//
// Data: width and height of the screen (default 1280x720, 64..4096);
// setup, shell commands (sh -c) run in order in the home directory, each
// of which must exit 0 within a minute; app, the command line (sh -c) of
// the app to open ("" leaves a bare screen); settle_ms, how long the reset
// may wait for the app's window and for the screen to settle (default
// 10000). A setup command that fails, or an app that exits with an error
// before showing a window, fails the reset as the infrastructure's fault
// (reasons task_setup, app_failed).
//
// Verifier (never sent to agents): evaluator, a shell command run in the
// home directory after the terminating step (gym.Verifier), once the
// screen has been still for VerifyQuiet (200 ms, at most 3 s), with the
// session's display, so it can read the files the apps wrote and ask the
// live apps (xsel for the selection, xprop for window properties);
// timeout (default 30s); oracle, a reference solution as actions in
// screenshot pixels ending with done, which Kind.Oracle plays
// (gym.ScriptOracle). Give apps a -geometry and bitmap fonts so that the
// oracle's coordinates hold.
//
// The reward: when the evaluator exits 0 and the last non-empty line of
// its stdout is a number, that number (it must lie in [0,1]); when it
// exits 0 otherwise, 1; when it exits 1..125, 0. An evaluator that times
// out, cannot run (exit status 126 or 127: a command not executable or not
// found, such as a missing xsel), is killed by a signal (or exits 128 or
// above, as shells report that) or prints a number outside [0,1] gives no
// verdict: the step is truncated with an infrastructure failure.
//
// The kind's limits: 50 steps, 60 s per step, 30 min per episode; a task's
// limits win. The built-in tasks (BuiltinTasks, ids "desktop-<name>") use
// xterm, xedit and xmessage, and exercise typing, clicking, double and
// right clicks, dragging, scrolling and a key combination; each carries
// its oracle.
//
// # Processes and safety
//
// Setup commands, the app and the evaluator run in process groups of
// their own that are killed at every reset and at close, with a clean
// environment (so the server's secrets in its own environment never reach
// them): PATH, HOME (a private directory per session, emptied at each
// reset), USER, LOGNAME (the server's user name), SHELL=/bin/sh, LANG and
// LC_ALL (C.UTF-8), TMPDIR (in the home), DISPLAY, XAUTHORITY, PS1="$ ",
// and NEXTSTATE_DESKTOP, a label with the owner and display that finds
// processes which left their group.
//
// The agent controls these apps, and an xterm is a shell. With the
// bubblewrap sandbox (setting desktop.sandbox "bwrap", and "auto", the
// default, wherever bwrap works) each of them runs confined (package
// envs/gui/internal/confine). What such a process sees is exactly:
//
//   - the host's system directories read-only: /usr, /bin, /sbin, /lib*,
//     /etc and /opt (programs, libraries, fonts, configuration), with the
//     host's secrets (/etc/shadow and gshadow, SSH host keys, TLS private
//     keys, docker's and kubernetes' configuration) and the paths of the
//     gym setting "sandbox.hide" (the served task folders, the store)
//     masked; of /var only dpkg's database and the font caches, and an
//     empty /var/tmp (bwrap.SystemArgs);
//   - the session's home directory, writable, at its host path (under
//     desktop.dir), which is also HOME and the working directory;
//   - the display's Xauthority, read-only, and its socket
//     (/tmp/.X11-unix/X<N>): no other display's socket or state;
//   - its own /proc (/proc/sys read-only), a minimal /dev, and empty
//     /tmp and /run;
//
// and nothing else: not the host's /root or /home, the project's
// checkout, /run with the docker socket, /var/lib/docker, other
// sessions' homes, or the server's state. The root is read-only. The
// process runs as uid and gid 1000 in a user namespace of its own (the
// server's user outside: the files it writes in the home are the
// server's), with no capabilities (CapEff 0; no new privileges, so setuid
// programs do not raise it; it cannot make further user namespaces where
// bwrap 0.8 and the kernel allow that), in new PID, IPC, UTS, cgroup and
// network namespaces (only a loopback of its own: the X socket is a file
// bound in), in a session of its own (it cannot push input into the
// server's terminal), and dies with the server. The display offers no
// MIT-SHM (the IPC namespaces differ); Xvfb itself runs outside the
// sandbox, and an app reaches it only through the X protocol on its own
// display. Evaluators run in the same sandbox, seeing the same home.
//
// With "none" the apps run UNSANDBOXED: as the server's user (root, if
// the server is root), seeing the host's files, network and processes,
// with only a private home directory; whatever the agent types into a
// terminal can read and change every file that user can (the checkout,
// the store), reach the docker socket, and signal the user's other
// processes. "auto" falls back to it, with a warning, only where bwrap
// cannot run. Use "none" only on a machine or container that holds
// nothing the agent may touch.
//
// # Settings and crash recovery
//
// Configure (gym.Configurer) reads:
//
//	desktop.displays  display numbers to use, such as "100-199" (default 100-999)
//	desktop.dir       state directory (default $TMPDIR/nextstate-desktops)
//	desktop.owner     owner id of this server's displays (default: sandbox.NewOwnerID, a lease on the process)
//	desktop.sandbox   auto (default), bwrap or none (unsandboxed)
//	sandbox.hide      host paths the sandbox masks, a PATH-style list (serve sets it)
//	desktop.xvfb      the Xvfb binary (default: Xvfb on PATH)
//
// Each Manager's Configure sets up an instance of its own (gym.Instance),
// with its own owner and displays; the Managers of one process share
// nothing of the kind, and, as servers, must not share an explicit
// desktop.owner. A display number is free when the Manager's instance does
// not use it and no live process holds its lock file (/tmp/.X<N>-lock);
// when another server (or Manager) takes it first, the next one is tried.
// Each display keeps its state in <dir>/<owner>/<N>/ (xvfb.pid with the pid
// and start time, the Xauthority, the session's home). Configure ends the
// displays and processes of owners whose process has died
// (sandbox.OwnerAlive; owners this host cannot judge are left alone) and
// removes their directories; a Manager's Shutdown ends everything of its
// instance's owner and removes its directory. Xvfb and the processes a
// session starts die with the server (the parent-death signal), and X
// clients with their display. An Xvfb that dies mid-episode fails the
// session as the infrastructure's fault (reason display_died); the next
// session starts a new one.
//
// Concurrency: the methods of Kind and of its Instances are safe for
// concurrent use; an Env's are called by one Session at a time, as gym.Env
// says.
//
// Requirements: Xvfb, and what the tasks use; on Debian: xvfb, xterm,
// x11-apps (xedit, xmessage), x11-utils (xprop), xsel, xfonts-base (the
// bitmap fonts the built-in tasks' coordinates rely on), and bubblewrap
// for the sandbox (which needs user namespaces).
package desktop
