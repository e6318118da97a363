package desktop

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/gui/internal/confine"
	"github.com/nextstate-rl/nextstate/envs/gui/internal/confine/confinetest"
	"github.com/nextstate-rl/nextstate/envs/internal/sbopen"
	"github.com/nextstate-rl/nextstate/gym"
)

// TestAppEscapes: what an agent types into a desktop's terminal cannot
// reach the host. A probe script, typed into the xterm's shell, looks for
// files the test planted outside the allowed set (the host's /root, a
// temporary directory, the checkout), the docker socket, /var/lib/docker,
// the shadow file, a path of "sandbox.hide", other sessions' files and
// display sockets, capabilities, and a writable /usr, / or /proc/sys; it
// writes what it found into the session's home, which the test reads back.
// Then the xterm and its shell are checked from the host's side.
func TestAppEscapes(t *testing.T) {
	needX(t)
	if !confine.Works() {
		t.Skip("bubblewrap is missing or cannot make namespaces here")
	}
	planted := confinetest.Plant(t)
	hidden := ""
	for _, p := range []string{"/etc/debian_version", "/etc/os-release", "/etc/hostname"} {
		if fi, err := os.Stat(p); err == nil && fi.Size() > 0 {
			hidden = p
			break
		}
	}
	task := bareTask("escape", "true", TaskData{App: xtermShell})
	e, _ := openEnv(t, gym.Settings{SettingSandbox: "bwrap", sbopen.SettingHide: hidden}, task, nil)
	extra := []string{
		// Only the session's own display socket and state directory.
		`[ "$(ls -A /tmp/.X11-unix)" = X` + strconv.Itoa(e.x.num) + ` ] || echo "escape: display sockets $(ls -A /tmp/.X11-unix)"`,
		`[ "$(ls -A "$(dirname "$(dirname "$HOME")")")" = ` + strconv.Itoa(e.x.num) + ` ] || echo "escape: other sessions' directories are visible"`,
		`[ "$(ls -A "$(dirname "$HOME")" | tr '\n' ' ')" = "Xauthority home " ] || echo "escape: the display's state directory is visible"`,
		`[ "$HOME" != /root ] && [ "$HOME" = "$(pwd)" ] && touch "$HOME/written" || echo "broken: the home directory is not the writable working directory"`,
		// The display still works from inside.
		`xprop -root >/dev/null || echo "broken: the display refuses the app"`,
	}
	if hidden != "" {
		extra = append(extra, `[ -s `+hidden+` ] && echo "escape: `+hidden+` (sandbox.hide) is readable"`)
	}
	out := filepath.Join(e.home, "probe.out")
	if err := os.WriteFile(filepath.Join(e.home, "probe.sh"), []byte(confinetest.Probe(t, out, planted, false, extra...)), 0o644); err != nil {
		t.Fatal(err)
	}
	stepEnv(t, e, click(cellX(20), cellY(5)))
	stepEnv(t, e, typ("sh probe.sh\n"))
	confinetest.Read(t, out)
	if _, err := os.Stat(filepath.Join(e.home, "written")); err != nil {
		t.Errorf("the file the probe wrote in its home is not in the session's home: %v", err)
	}

	// From the host: the xterm and its shell (not the bwrap that started
	// them, which runs outside).
	apps := 0
	for _, pid := range markedProcs(e.ps.marker) {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if name := strings.TrimSpace(string(comm)); name != "bwrap" {
			confinetest.CheckProcess(t, pid, name, planted)
			apps++
		}
	}
	if apps < 2 {
		t.Errorf("found %d processes of the app (want the xterm and its shell)", apps)
	}
}
