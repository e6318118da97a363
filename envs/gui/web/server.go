package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nextstate-rl/nextstate/envs/gui/web/webtasks"
	"github.com/nextstate-rl/nextstate/gym"
)

// MiniWoB++'s viewport, the default of a task that names none.
const (
	DefaultWidth  = 160
	DefaultHeight = 210
)

// MiniWoB++'s window, the least window a page is laid out in: a task's
// window defaults to this or its viewport, whichever is larger each way.
const (
	DefaultWindowWidth  = 500
	DefaultWindowHeight = 320
)

// TaskData is a web-v1 task's Data: the page to open, relative to the
// task folder (the built-in pages, Task.Dir, or the web.miniwob_dir
// setting), the viewport (the screenshot's size), and the window the page
// is laid out in, whose top-left corner the viewport is (as MiniWoB++
// crops its screenshots; browser.Page.SetWindow).
type TaskData struct {
	Page         string `json:"page"`
	Width        int    `json:"width,omitempty"`
	Height       int    `json:"height,omitempty"`
	WindowWidth  int    `json:"window_width,omitempty"`
	WindowHeight int    `json:"window_height,omitempty"`
}

func (d TaskData) json() json.RawMessage {
	b, _ := json.Marshal(d) // a TaskData always encodes
	return b
}

// taskData reads and checks a task's Data. A task that does not fit is
// the infrastructure's fault (whoever wrote the task), not the agent's.
func taskData(t *gym.Task) (TaskData, error) {
	var d TaskData
	if len(t.Data) > 0 {
		dec := json.NewDecoder(strings.NewReader(string(t.Data)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			return d, gym.InfraFault("bad_task", fmt.Errorf(`web-v1 task %s: data: %v; want {"page": "miniwob/NAME.html", "width": W, "height": H, "window_width": WW, "window_height": WH}`, t.ID, err))
		}
	}
	if d.Width == 0 {
		d.Width = DefaultWidth
	}
	if d.Height == 0 {
		d.Height = DefaultHeight
	}
	if d.WindowWidth == 0 {
		d.WindowWidth = max(d.Width, DefaultWindowWidth)
	}
	if d.WindowHeight == 0 {
		d.WindowHeight = max(d.Height, DefaultWindowHeight)
	}
	switch {
	case d.Page == "":
		return d, gym.InfraFault("bad_task", fmt.Errorf(`web-v1 task %s: data has no "page" (such as "miniwob/click-test.html")`, t.ID))
	case !fs.ValidPath(d.Page) || !strings.HasSuffix(d.Page, ".html"):
		return d, gym.InfraFault("bad_task", fmt.Errorf("web-v1 task %s: page %q: want a relative path to an .html file inside the task folder, without ..", t.ID, d.Page))
	case d.Width < 1 || d.Height < 1 || d.Width > 4096 || d.Height > 4096:
		return d, gym.InfraFault("bad_task", fmt.Errorf("web-v1 task %s: viewport %dx%d: want 1..4096 pixels each way", t.ID, d.Width, d.Height))
	case d.WindowWidth < d.Width || d.WindowHeight < d.Height || d.WindowWidth > 4096 || d.WindowHeight > 4096:
		return d, gym.InfraFault("bad_task", fmt.Errorf("web-v1 task %s: window %dx%d for a viewport of %dx%d: want at least the viewport and at most 4096 pixels each way (0: %dx%d or the viewport, whichever is larger)",
			t.ID, d.WindowWidth, d.WindowHeight, d.Width, d.Height, DefaultWindowWidth, DefaultWindowHeight))
	}
	return d, nil
}

// server serves task folders over loopback HTTP, each under a prefix of
// its own: /builtin/ is webtasks.FS, /d<n>/ a folder on disk. The folder's
// layout is kept, so a page's ../core/core.js resolves as in MiniWoB++.
// Directory listings are refused.
type server struct {
	ln   net.Listener
	http *http.Server
	done chan struct{}

	mu    sync.RWMutex
	roots map[string]fs.FS  // by prefix
	dirs  map[string]string // prefix by folder
}

func newServer() (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("web-v1: listening on loopback: %w", err)
	}
	s := &server{ln: ln, done: make(chan struct{}),
		roots: map[string]fs.FS{"builtin": webtasks.FS}, dirs: map[string]string{}}
	s.http = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { // owned by s: close waits for done
		defer close(s.done)
		s.http.Serve(ln)
	}()
	return s, nil
}

// url returns the address of page in the folder dir ("" for the built-in
// pages).
func (s *server) url(dir, page string) string {
	prefix := "builtin"
	if dir != "" {
		s.mu.Lock()
		p, ok := s.dirs[dir]
		if !ok {
			p = "d" + strconv.Itoa(len(s.dirs)+1)
			s.dirs[dir] = p
			s.roots[p] = os.DirFS(dir)
		}
		s.mu.Unlock()
		prefix = p
	}
	return "http://" + s.ln.Addr().String() + "/" + prefix + "/" + page
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	prefix, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	s.mu.RLock()
	root, ok := s.roots[prefix]
	s.mu.RUnlock()
	name := path.Clean(rest)
	if !ok || rest == "" || strings.HasSuffix(rest, "/") || !fs.ValidPath(name) {
		http.NotFound(w, r)
		return
	}
	fi, err := fs.Stat(root, name)
	if err != nil || fi.IsDir() {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeFileFS(w, r, root, name)
}

func (s *server) close(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	select {
	case <-s.done:
	case <-ctx.Done():
		return errors.Join(err, ctx.Err())
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
