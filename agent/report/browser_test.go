package report

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromium finds a Chromium binary: $NEXTSTATE_CHROMIUM, Debian's
// chromium-headless-shell (the binary, not its launcher script, so that
// killing the process kills the browser), or chromium on the PATH.
func chromium() string {
	for _, p := range []string{os.Getenv("NEXTSTATE_CHROMIUM"), "/usr/lib/chromium/chromium-headless-shell", "/usr/lib/chromium/chromium"} {
		if fi, err := os.Stat(p); p != "" && err == nil && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	for _, name := range []string{"chromium-headless-shell", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestHTMLInBrowser runs the page's script in Chromium: the viewer shows
// one trial at a time and switches on the select and on the trials
// table's links, the tables sort on a click, the screenshot decodes, and
// nothing throws.
func TestHTMLInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium (set NEXTSTATE_CHROMIUM or install chromium-headless-shell): the page's script is not run")
	}
	dir := t.TempDir()
	copyDir(t, fixture, dir)
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.DisableGPU,
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			// Its own process group, and killed with the test.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		}))
	if os.Getuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	var mu sync.Mutex
	var thrown []string
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			mu.Lock()
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			thrown = append(thrown, fmt.Sprintf("line %d: %s", d.LineNumber+1, msg))
			mu.Unlock()
		}
	}))
	defer cancel()
	if err := chromedp.Do(ctx); err != nil { // starts the browser, bound to ctx
		t.Skipf("Chromium at %s does not start: %v", bin, err)
	}
	tctx, tcancel := context.WithTimeout(ctx, 60*time.Second)
	defer tcancel()

	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(tctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	const visible = `Array.from(document.querySelectorAll("section.trial")).filter(s => !s.hidden).map(s => s.id).join(",")`
	waitVisible := func(want string) {
		t.Helper()
		js := `(` + visible + `) === "` + want + `"`
		if _, err := chromedp.Run(tctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Fatalf("visible trials %q, want %q: %v", eval(visible), want, err)
		}
	}

	if err := chromedp.Do(tctx, chromedp.Navigate("file://"+filepath.Join(dir, HTMLFile))); err != nil {
		t.Fatal(err)
	}
	waitVisible("t-0")
	// The select: hello#0 is the sixth trial.
	eval(`(() => { const s = document.getElementById("trial-select"); s.value = "t-5"; s.dispatchEvent(new Event("change")); return ""; })()`)
	waitVisible("t-5")
	if got := eval(`location.hash`); got != "#t-5" {
		t.Errorf("hash %q", got)
	}
	// A link of the trials table: form#0.
	eval(`(() => { document.querySelector('#trial-table a[href="#t-1"]').click(); return ""; })()`)
	waitVisible("t-1")
	if got := eval(`document.getElementById("trial-select").value`); got != "t-1" {
		t.Errorf("the select shows %q after the link, want t-1", got)
	}
	// form#0's screenshot decodes: 8×6.
	if _, err := chromedp.Run(tctx, chromedp.Poll[bool](`(() => { const i = document.querySelector("#t-1 img.shot"); return !!i && i.complete && i.naturalWidth === 8 && i.naturalHeight === 6; })()`,
		chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Errorf("the embedded screenshot did not decode: %v", err)
	}

	// Sorting the task table by pass rate (the 8th column), then back.
	col := func(i int) string {
		return eval(`Array.from(document.querySelectorAll("#task-table tbody tr")).map(r => r.cells[` + string(rune('0'+i)) + `].textContent).join(",")`)
	}
	click := `(() => { document.querySelectorAll("#task-table th")[7].click(); return ""; })()`
	if got := col(0); got != "broken,form,hello,order" {
		t.Fatalf("task order %q", got)
	}
	eval(click)
	if got := col(0); got != "broken,form,hello,order" { // by pass rate ascending: –, 0.25, 0.5, 1
		t.Errorf("ascending by pass rate: %q", got)
	}
	eval(click)
	if got := col(0); got != "order,hello,form,broken" {
		t.Errorf("descending by pass rate: %q", got)
	}
	// By task name descending (text), then by the numeric Trials column.
	eval(`(() => { const h = document.querySelectorAll("#task-table th")[0]; h.click(); h.click(); return ""; })()`)
	if got := col(0); got != "order,hello,form,broken" {
		t.Errorf("descending by task: %q", got)
	}
	eval(`(() => { document.querySelectorAll("#task-table th")[3].click(); return ""; })()`)
	if got := col(3); got != "1,4,4,5" {
		t.Errorf("ascending by trials: %q", got)
	}

	// The listener sees exceptions: one thrown on purpose is the only one.
	eval(`(() => { setTimeout(() => { throw new Error("deliberate"); }); return ""; })()`)
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		n := len(thrown)
		mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(thrown) != 1 || !strings.Contains(thrown[0], "deliberate") {
		t.Errorf("the page's script threw: %s", strings.Join(thrown, "; "))
	}
}
