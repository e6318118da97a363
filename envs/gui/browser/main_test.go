package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"
)

// TestMain checks, after the package's tests, that no browser process or
// profile directory of this test process is left. Run with
// NEXTSTATE_BROWSER_TEST_SLEEPER set, the test binary only sleeps: TestReap
// runs it as a stand-in for a dead owner's browser.
func TestMain(m *testing.M) {
	if os.Getenv("NEXTSTATE_BROWSER_TEST_SLEEPER") != "" {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	code := m.Run()
	if pids, dirs := Leftovers("", OwnerPrefix()); len(pids)+len(dirs) > 0 {
		fmt.Fprintf(os.Stderr, "leak: the tests left browser processes %v and directories %v\n", pids, dirs)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// newPool returns a pool that is closed when the test ends, or skips the
// test when there is no browser.
func newPool(t testing.TB, opts Options) *Pool {
	t.Helper()
	if err := Available(opts.ExecPath); err != nil {
		t.Skipf("no browser: %v", err)
	}
	p, err := NewPool(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Errorf("closing the pool: %v", err)
		}
	})
	return p
}

// testServer serves testdata over loopback.
func testServer(t testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	t.Cleanup(srv.Close)
	return srv
}

// openPage opens testdata/page.html at 200x200.
func openPage(t testing.TB, p *Pool) *Page {
	t.Helper()
	ctx := t.Context()
	pg, err := p.NewPage(ctx, 200, 200)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close(context.Background()) })
	if err := pg.Navigate(ctx, testServer(t).URL+"/page.html"); err != nil {
		t.Fatal(err)
	}
	return pg
}
