package gobuild

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"

	"github.com/nextstate-rl/nextstate/envs/swe"
)

// BuiltinList is the shipped build list, instances/go.jsonl: one JSON
// object a line, {"module", "old", "new"}; "#" lines are comments.
//
//go:embed instances/go.jsonl
var BuiltinList []byte

// ReadList reads a build list: JSON Lines of Spec ({"module", "old",
// "new"}), blank and "#" lines skipped. Each entry needs all three fields.
func ReadList(data []byte) ([]Spec, error) {
	var out []Spec
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var s Spec
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("build list line %d: %w (want {\"module\": ..., \"old\": ..., \"new\": ...})", n, err)
		}
		if s.Module == "" || s.Old == "" || s.New == "" || s.OldDir != "" || s.NewDir != "" {
			return nil, fmt.Errorf("build list line %d: want module, old and new (tagged versions), and nothing else", n)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("the build list is empty")
	}
	return out, nil
}

// BuildList builds every entry of a build list (listFile; "" is
// BuiltinList) and returns the results in order. It is idempotent: an
// entry whose instance is already in Options.Instances, with its
// repository at the base commit and its module versions in the module
// cache, is reused, not rebuilt (Result.Reused). Entries that fail or are
// rejected do not stop the others; their errors are joined in the error.
func BuildList(ctx context.Context, listFile string, opts Options) ([]*Result, error) {
	data := BuiltinList
	if listFile != "" {
		var err error
		if data, err = os.ReadFile(listFile); err != nil {
			return nil, err
		}
	}
	specs, err := ReadList(data)
	if err != nil {
		return nil, err
	}
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, err
	}
	var have map[string]swe.Instance
	if opts.Instances != "-" {
		if have, err = readInstances(opts.Instances); err != nil {
			return nil, err
		}
	}
	var out []*Result
	var errs []error
	for _, s := range specs {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		if in, ok := have[InstanceID(s.Module, s.New)]; ok && reusable(ctx, in, opts) {
			opts.Log.Info("reusing", "instance", in.InstanceID)
			out = append(out, &Result{Instance: in, Reused: true})
			continue
		}
		opts.Log.Info("building", "module", s.Module, "old", s.Old, "new", s.New)
		res, err := Build(ctx, s, opts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, res)
	}
	return out, errors.Join(errs...)
}

// reusable reports whether a recorded instance can be used as it is: its
// repository holds its base commit and both module versions are in the
// module cache.
func reusable(ctx context.Context, in swe.Instance, opts Options) bool {
	if in.Source == "" || in.Module == "" {
		return false
	}
	b := &builder{opts: opts, log: opts.Log}
	if _, err := b.git(ctx, in.Source, map[string]string{"GIT_DIR": filepath.Join(in.Source, ".git")},
		"cat-file", "-e", in.BaseCommit+"^{commit}"); err != nil {
		return false
	}
	esc, err := escapeModulePath(in.Module)
	if err != nil {
		return false
	}
	for _, v := range []string{in.Old, in.New} {
		if _, err := os.Stat(filepath.Join(opts.ModCache, "cache", "download", filepath.FromSlash(esc), "@v", v+".zip")); err != nil {
			return false
		}
	}
	return true
}

// escapeModulePath is the module cache's form of a path: each upper-case
// letter as "!" and its lower case.
func escapeModulePath(p string) (string, error) {
	var b strings.Builder
	for _, r := range p {
		switch {
		case r == '!' || r >= unicode.MaxASCII:
			return "", fmt.Errorf("module path %q: unexpected character %q", p, r)
		case unicode.IsUpper(r):
			b.WriteByte('!')
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), nil
}

// readInstances reads a JSON Lines instances file by id; a missing file is
// empty.
func readInstances(path string) (map[string]swe.Instance, error) {
	out := map[string]swe.Instance{}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var in swe.Instance
		if err := json.Unmarshal(line, &in); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if in.Source != "" && !filepath.IsAbs(in.Source) {
			in.Source = filepath.Join(filepath.Dir(path), in.Source)
		}
		out[in.InstanceID] = in
	}
	return out, sc.Err()
}

// WriteInstance adds in to the JSON Lines file at path, replacing the
// line of an instance with the same id, keeping the others in order. A
// Source under the file's directory is written relative to it. The
// file is rewritten whole (a temporary file renamed over it) under an
// exclusive lock (path+".lock"), so builders running at once do not lose
// each other's instances.
func WriteInstance(path string, in swe.Instance) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", path, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	if rel, err := filepath.Rel(filepath.Dir(path), in.Source); err == nil && filepath.IsAbs(in.Source) &&
		rel != ".." && !strings.HasPrefix(rel, "../") {
		in.Source = rel // LoadInstances reads it relative to the file
	}
	line, err := json.Marshal(in)
	if err != nil {
		return err
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var buf bytes.Buffer
	replaced := false
	sc := bufio.NewScanner(bytes.NewReader(old))
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for sc.Scan() {
		l := bytes.TrimSpace(sc.Bytes())
		if len(l) == 0 {
			continue
		}
		var id struct {
			InstanceID string `json:"instance_id"`
		}
		if json.Unmarshal(l, &id) == nil && id.InstanceID == in.InstanceID {
			if !replaced {
				buf.Write(line)
				buf.WriteByte('\n')
				replaced = true
			}
			continue
		}
		buf.Write(l)
		buf.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if !replaced {
		buf.Write(line)
		buf.WriteByte('\n')
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
