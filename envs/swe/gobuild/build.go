package gobuild

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/envs/swe"
)

// Spec names the two versions of a module to build an instance from: a
// module path and two tagged versions fetched through the module proxy,
// or two local directories (OldDir, NewDir; then Module defaults to
// NewDir's go.mod module path and Old, New to "old" and "new").
type Spec struct {
	Module string `json:"module"`
	Old    string `json:"old"`
	New    string `json:"new"`
	OldDir string `json:"old_dir,omitempty"`
	NewDir string `json:"new_dir,omitempty"`
}

// Options configure Build and BuildList. The zero value means the stated
// defaults.
type Options struct {
	// ModCache is the module cache (GOMODCACHE) the sources and every
	// dependency are downloaded into and that tests read offline.
	// Default ~/.cache/nextstate/swe/gomod.
	ModCache string
	// Out is where instance repositories are made, one directory per
	// instance id. Default ~/.cache/nextstate/swe/instances.
	Out string
	// Instances is the JSON Lines file built instances are written to (an
	// instance already there by id is replaced). Default Out/instances.jsonl.
	// "-" writes nothing.
	Instances string
	// BuildCache is GOCACHE for the builds and test runs; empty: the go
	// command's default (the user's build cache).
	BuildCache string
	// Proxy is GOPROXY for downloads; empty: go env's.
	Proxy string
	// Go is the go command. Default "go".
	Go string
	// TestTimeout bounds each go test run (go test -timeout; the command
	// is killed two minutes later). Default 5m.
	TestTimeout time.Duration
	// DownloadTimeout bounds each download command. Default 10m.
	DownloadTimeout time.Duration
	// AllPackages tests every package of the module (./...) instead of
	// those the diff touches.
	AllPackages bool
	// Log receives progress; nil discards it.
	Log *slog.Logger
}

// Timings is how long each stage of a build took.
type Timings struct {
	Fetch   time.Duration `json:"fetch"`   // sources and dependencies into the module cache
	Repo    time.Duration `json:"repo"`    // the git repository and the diff
	Before  time.Duration `json:"before"`  // go test on base + test_patch
	After   time.Duration `json:"after"`   // go test on base + test_patch + patch
	Confirm time.Duration `json:"confirm"` // the harness-shaped run of FAIL_TO_PASS and PASS_TO_PASS after the fix
	Total   time.Duration `json:"total"`
}

// Result is one built instance.
type Result struct {
	Instance swe.Instance `json:"instance"`
	// Packages are the packages whose tests were run ("./rel").
	Packages []string `json:"packages"`
	// Reused: BuildList found the instance already built.
	Reused  bool    `json:"reused,omitempty"`
	Timings Timings `json:"timings"`
}

// ErrRejected is wrapped by every error that says the pair yields no valid
// instance (as opposed to a failure to build one); a *RejectError says why.
var ErrRejected = errors.New("no valid instance")

// RejectError says why a pair of versions yields no valid instance.
type RejectError struct {
	Spec   Spec
	Reason string
}

func (e *RejectError) Error() string {
	return fmt.Sprintf("%s %s..%s: %v: %s", e.Spec.Module, e.Spec.Old, e.Spec.New, ErrRejected, e.Reason)
}

func (e *RejectError) Unwrap() error { return ErrRejected }

type builder struct {
	opts Options
	log  *slog.Logger
	spec Spec   // the pair being built (sources completes it)
	work string // scratch directory, removed at the end
}

func (o Options) withDefaults() (Options, error) {
	root := ""
	if d, err := os.UserCacheDir(); err == nil {
		root = filepath.Join(d, "nextstate", "swe")
	} else {
		root = filepath.Join(".nextstate", "swe")
	}
	if o.ModCache == "" {
		o.ModCache = filepath.Join(root, "gomod")
	}
	if o.Out == "" {
		o.Out = filepath.Join(root, "instances")
	}
	var err error
	if o.ModCache, err = absPath(o.ModCache); err != nil {
		return o, err
	}
	if o.Out, err = absPath(o.Out); err != nil {
		return o, err
	}
	if o.Instances == "" {
		o.Instances = filepath.Join(o.Out, "instances.jsonl")
	} else if o.Instances != "-" {
		if o.Instances, err = absPath(o.Instances); err != nil {
			return o, err
		}
	}
	if o.BuildCache != "" {
		if o.BuildCache, err = absPath(o.BuildCache); err != nil {
			return o, err
		}
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.TestTimeout <= 0 {
		o.TestTimeout = 5 * time.Minute
	}
	if o.DownloadTimeout <= 0 {
		o.DownloadTimeout = 10 * time.Minute
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o, nil
}

// InstanceID is the id of the instance built from module at version new:
// the module path with "/" written "__", a dash, the version.
func InstanceID(module, newVersion string) string {
	return strings.ReplaceAll(module, "/", "__") + "-" + newVersion
}

// Build makes the instance of spec: it fetches both versions (or reads the
// local directories), fills the module cache with their dependencies,
// commits OLD into a git repository under Options.Out (the base commit),
// splits the OLD→NEW diff into test_patch and patch, runs the tests before
// and after the fix, and keeps the instance when some test fails before
// and passes after. It writes the instance to Options.Instances and returns
// it; a pair that yields no valid instance returns a *RejectError.
func Build(ctx context.Context, spec Spec, opts Options) (*Result, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	res, err := build(ctx, spec, opts)
	if err != nil {
		return nil, err
	}
	if opts.Instances != "-" {
		if err := WriteInstance(opts.Instances, res.Instance); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// build runs the phases of Build, each below: the sources, the repository
// and its diff, the dependencies, the two test runs, the classification and
// the confirming run; then it puts the instance together.
func build(ctx context.Context, spec Spec, opts Options) (*Result, error) {
	begin := time.Now()
	b := &builder{opts: opts, log: opts.Log, spec: spec}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, errGitNotFound
	}
	if err := os.MkdirAll(opts.ModCache, 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "nextstate-gobuild-")
	if err != nil {
		return nil, err
	}
	b.work = work
	defer os.RemoveAll(work)

	res := &Result{}
	t := time.Now()
	src, err := b.sources(ctx)
	if err != nil {
		return nil, err
	}
	res.Timings.Fetch = time.Since(t)
	spec = b.spec // sources fills in what local directories leave out
	id := InstanceID(spec.Module, spec.New)

	t = time.Now()
	repoDir := filepath.Join(opts.Out, id)
	base, d, err := b.repoAndDiff(ctx, repoDir, src)
	if err != nil {
		return nil, err
	}
	res.Timings.Repo = time.Since(t)

	t = time.Now()
	if err := b.dependencies(ctx, repoDir, base, src.newDir); err != nil {
		return nil, err
	}
	res.Timings.Fetch += time.Since(t)

	runs, err := b.testRuns(ctx, repoDir, base, d, &res.Timings)
	if err != nil {
		return nil, err
	}
	res.Packages = runs.pkgs
	f2p, p2p, stillFailing := classify(runs.a, runs.b)
	if len(f2p) == 0 {
		return nil, b.noFailToPass(runs, stillFailing)
	}

	t = time.Now()
	f2pNames, p2pNames, err := b.confirm(ctx, runs, f2p, p2p)
	if err != nil {
		return nil, err
	}
	res.Timings.Confirm = time.Since(t)

	created := ""
	if !src.newTime.IsZero() {
		created = src.newTime.UTC().Format(time.RFC3339)
	}
	res.Instance = swe.Instance{
		InstanceID:       id,
		Repo:             spec.Module,
		BaseCommit:       base,
		Patch:            d.Patch,
		TestPatch:        d.TestPatch,
		ProblemStatement: problemStatement(spec, d, f2p, runs.a, runs.before),
		FailToPass:       f2pNames,
		PassToPass:       p2pNames,
		Version:          spec.Old,
		CreatedAt:        created,
		Source:           repoDir,
		Language:         "go",
		Module:           spec.Module,
		Old:              spec.Old,
		New:              spec.New,
	}
	if err := res.Instance.Validate(); err != nil {
		return nil, err
	}
	res.Timings.Total = time.Since(begin)
	return res, nil
}

// reject says why the pair yields no valid instance.
func (b *builder) reject(format string, args ...any) error {
	return &RejectError{Spec: b.spec, Reason: fmt.Sprintf(format, args...)}
}

// sourceDirs are the two versions' source trees, and their release times
// (zero for local directories).
type sourceDirs struct {
	oldDir, newDir   string
	oldTime, newTime time.Time
}

// sources finds both versions: the local directories of b.spec (its
// module path read from NEW's go.mod and its versions "old" and "new"
// where it names none), or the module's two releases, downloaded into the
// module cache.
func (b *builder) sources(ctx context.Context) (sourceDirs, error) {
	spec := &b.spec
	src := sourceDirs{oldDir: spec.OldDir, newDir: spec.NewDir}
	var err error
	if src.oldDir != "" || src.newDir != "" {
		if src.oldDir == "" || src.newDir == "" {
			return src, errors.New("local directories: give both the OLD and the NEW directory")
		}
		for _, d := range []*string{&src.oldDir, &src.newDir} {
			if *d, err = filepath.Abs(*d); err != nil {
				return src, err
			}
			if _, err := os.Stat(filepath.Join(*d, "go.mod")); err != nil {
				return src, fmt.Errorf("%s is not a Go module (no go.mod): %w", *d, err)
			}
		}
		if spec.Module == "" {
			if spec.Module, err = swe.GoModulePath(filepath.Join(src.newDir, "go.mod")); err != nil {
				return src, err
			}
		}
		if spec.Old == "" {
			spec.Old = "old"
		}
		if spec.New == "" {
			spec.New = "new"
		}
		return src, nil
	}
	if spec.Module == "" || spec.Old == "" || spec.New == "" {
		return src, errors.New("give a module path and two versions (MODULE OLD NEW), or two local directories")
	}
	if spec.Old == spec.New {
		return src, fmt.Errorf("OLD and NEW are both %s: give two versions", spec.Old)
	}
	b.log.Info("downloading", "module", spec.Module, "old", spec.Old, "new", spec.New)
	oldInfo, err := b.download(ctx, spec.Module, spec.Old)
	if err != nil {
		return src, err
	}
	newInfo, err := b.download(ctx, spec.Module, spec.New)
	if err != nil {
		return src, err
	}
	return sourceDirs{oldDir: oldInfo.Dir, newDir: newInfo.Dir, oldTime: oldInfo.Time, newTime: newInfo.Time}, nil
}

// repoAndDiff commits OLD into a git repository at repoDir (the base
// commit) and splits the OLD→NEW diff into the test patch and the fix; a
// pair without either is rejected.
func (b *builder) repoAndDiff(ctx context.Context, repoDir string, src sourceDirs) (string, diff, error) {
	spec := b.spec
	base, err := b.makeRepo(ctx, repoDir, src.oldDir, spec.Module+" "+spec.Old, src.oldTime)
	if err != nil {
		return "", diff{}, fmt.Errorf("making the repository of %s %s: %w", spec.Module, spec.Old, err)
	}
	d, err := b.diffNew(ctx, repoDir, base, src.newDir)
	if err != nil {
		return "", diff{}, fmt.Errorf("diffing %s..%s: %w", spec.Old, spec.New, err)
	}
	if d.TestPatch == "" {
		return "", diff{}, b.reject("%s changes no *_test.go file and nothing under testdata/", spec.New)
	}
	if d.Patch == "" {
		return "", diff{}, b.reject("%s changes only tests: there is no fix", spec.New)
	}
	return base, d, nil
}

// dependencies fetches the dependencies of both sides into the module
// cache, from scratch copies of the base commit and of NEW.
func (b *builder) dependencies(ctx context.Context, repoDir, base, newDir string) error {
	for _, side := range []struct{ name, commit string }{{"old", base}, {"new", ""}} {
		dir := filepath.Join(b.work, "deps-"+side.name)
		var err error
		if side.commit != "" {
			err = b.checkout(ctx, repoDir, side.commit, dir)
		} else {
			err = copyTree(newDir, dir)
		}
		if err != nil {
			return err
		}
		if err := b.prefetch(ctx, dir); err != nil {
			return fmt.Errorf("fetching the dependencies of %s: %w", side.name, err)
		}
	}
	return nil
}

// testRunResult is the two test runs: a on before (base + test_patch), b
// on after (before + patch), over pkgs.
type testRunResult struct {
	before, after string
	pkgs          []string
	a, b          *swe.GoTestRun
}

// testRuns checks out the two trees, (a) base + test_patch and (b) (a) +
// patch, and runs the tests of the packages the diff touches (all of them
// with Options.AllPackages) on each; a test binary that died before
// reaching tests that pass after the fix is run again (rerunUnreached).
func (b *builder) testRuns(ctx context.Context, repoDir, base string, d diff, tm *Timings) (testRunResult, error) {
	r := testRunResult{before: filepath.Join(b.work, "before"), after: filepath.Join(b.work, "after")}
	for _, dir := range []string{r.before, r.after} {
		if err := b.checkout(ctx, repoDir, base, dir); err != nil {
			return r, err
		}
		if err := b.apply(ctx, dir, d.TestPatch, "test patch"); err != nil {
			return r, err
		}
	}
	if err := b.apply(ctx, r.after, d.Patch, "patch"); err != nil {
		return r, err
	}
	r.pkgs = []string{"./..."}
	if !b.opts.AllPackages {
		r.pkgs = touchedPackages(r.after, d.Changed)
		if len(r.pkgs) == 0 {
			return r, b.reject("the diff touches no Go package with tests")
		}
	}
	var err error
	var el time.Duration
	b.log.Info("testing before the fix", "packages", r.pkgs)
	if r.a, el, err = b.goTest(ctx, r.before, "", existing(r.before, r.pkgs)); err != nil {
		return r, err
	}
	tm.Before = el
	b.log.Info("testing after the fix", "packages", r.pkgs)
	if r.b, el, err = b.goTest(ctx, r.after, "", existing(r.after, r.pkgs)); err != nil {
		return r, err
	}
	tm.After = el
	if el, err = b.rerunUnreached(ctx, r.before, b.spec.Module, r.a, r.b); err != nil {
		return r, err
	}
	tm.Before += el
	return r, nil
}

// noFailToPass says why no test fails before the fix and passes after it.
func (b *builder) noFailToPass(r testRunResult, stillFailing []string) error {
	switch {
	case len(r.b.BuildFailures) > 0:
		pkg := sortedKeys(r.b.BuildFailures)[0]
		return b.reject("the tests of %s do not build after the fix: %s", pkg, firstLines(r.b.BuildFailures[pkg], 3))
	case len(passing(r.b)) == 0:
		return b.reject("no test passes after the fix: %s", runSummary(r.b))
	case len(stillFailing) > 0:
		return b.reject("the tests that fail before the fix still fail after it: %s", strings.Join(firstN(stillFailing, 10), ", "))
	}
	return b.reject("no test fails before the fix (every test of %s passes on %s with the new tests)",
		strings.Join(r.pkgs, " "), b.spec.Old)
}

// confirm names the tests as the instance's lists carry them, then runs
// them the way the harness will, after the fix: a FAIL_TO_PASS test that
// does not pass again rejects the pair (flaky), a PASS_TO_PASS one is
// dropped.
func (b *builder) confirm(ctx context.Context, r testRunResult, f2p, p2p []string) (f2pNames, p2pNames []string, err error) {
	funcs, err := swe.GoTestFuncs(r.after)
	if err != nil {
		return nil, nil, err
	}
	if more, err := swe.GoTestFuncs(r.before); err == nil {
		for name, dirs := range more {
			for _, dir := range dirs {
				if !slices.Contains(funcs[name], dir) {
					funcs[name] = append(funcs[name], dir)
				}
			}
		}
	}
	f2pNames = listNames(f2p, funcs)
	p2pNames = listNames(p2p, funcs)
	targets, runPat, err := swe.GoTestTargets(r.after, append(slices.Clone(f2pNames), p2pNames...))
	if err != nil {
		return nil, nil, fmt.Errorf("finding the tests to confirm: %w", err)
	}
	runC, _, err := b.goTest(ctx, r.after, runPat, targets)
	if err != nil {
		return nil, nil, err
	}
	var flaky []string
	for _, n := range f2pNames {
		if runC.Status(n) != swe.TestPass {
			flaky = append(flaky, n)
		}
	}
	if len(flaky) > 0 {
		return nil, nil, b.reject("FAIL_TO_PASS tests did not pass again after the fix (flaky?): %s", strings.Join(firstN(flaky, 10), ", "))
	}
	p2pNames = slices.DeleteFunc(p2pNames, func(n string) bool {
		if runC.Status(n) != swe.TestPass {
			b.log.Warn("dropping a flaky PASS_TO_PASS test", "test", n)
			return true
		}
		return false
	})
	return f2pNames, p2pNames, nil
}

// touchedPackages are the package directories ("./rel") of dir that hold
// tests and that the diff touches: the directory of a changed .go file,
// the directory above a changed testdata tree. Directories of nested
// modules are left out.
func touchedPackages(dir string, changed []string) []string {
	set := map[string]bool{}
	for _, p := range changed {
		var rel string
		switch {
		case IsTestPath(p) && !strings.HasSuffix(p, "_test.go"):
			i := strings.Index("/"+p, "/testdata/")
			rel = strings.TrimSuffix(p[:i], "/")
		case strings.HasSuffix(p, ".go"):
			rel = path.Dir(p)
		default:
			continue
		}
		if rel == "" {
			rel = "."
		}
		set[rel] = true
	}
	var out []string
	for rel := range set {
		if nestedModule(dir, rel) || !hasTests(filepath.Join(dir, filepath.FromSlash(rel))) {
			continue
		}
		if rel == "." {
			out = append(out, ".")
		} else {
			out = append(out, "./"+rel)
		}
	}
	sort.Strings(out)
	return out
}

// nestedModule reports whether rel (a directory of the module at root)
// belongs to a module of its own.
func nestedModule(root, rel string) bool {
	for p := rel; p != "." && p != "/" && p != ""; p = path.Dir(p) {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p), "go.mod")); err == nil {
			return true
		}
	}
	return false
}

func hasTests(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), "_test.go") {
			return true
		}
	}
	return false
}

// existing keeps the package patterns whose directory exists in dir (a
// package the test patch adds may not exist before it).
func existing(dir string, pkgs []string) []string {
	var out []string
	for _, p := range pkgs {
		if p == "./..." || hasTests(filepath.Join(dir, filepath.FromSlash(p))) {
			out = append(out, p)
		}
	}
	return out
}

// rerunUnreached completes the run before the fix (a) where a test binary
// died (a panic, os.Exit, a timeout) before reaching tests that pass after
// the fix (b): it runs those tests again, package by package, selected by
// -run, until each has a result or no run makes progress (at most five
// runs a package). A test's own result then decides whether it is in
// FAIL_TO_PASS, not its neighbour's crash. Packages that did not build are
// left as they are.
func (b *builder) rerunUnreached(ctx context.Context, dir, modPath string, a, after *swe.GoTestRun) (time.Duration, error) {
	var total time.Duration
	for pkg, status := range a.Packages {
		if status != swe.TestFail {
			continue
		}
		if _, broken := a.BuildFailures[pkg]; broken {
			continue
		}
		rel, ok := strings.CutPrefix(pkg, modPath)
		if !ok || rel != "" && rel[0] != '/' {
			continue
		}
		pattern := "." + rel
		for range 5 {
			tops := unreached(pkg, a, after)
			if len(tops) == 0 {
				break
			}
			b.log.Info("running again tests a crash did not reach", "package", pkg, "tests", len(tops))
			r, el, err := b.goTest(ctx, dir, "^("+strings.Join(tops, "|")+")$", []string{pattern})
			if err != nil {
				return total, err
			}
			total += el
			added := 0
			for name, s := range r.Tests {
				if p, _ := swe.SplitTestName(name); p == pkg {
					if _, seen := a.Tests[name]; !seen {
						a.Tests[name] = s
						added++
					}
				}
			}
			for name, out := range r.Output {
				if _, seen := a.Output[name]; !seen {
					a.Output[name] = out
				}
			}
			if added == 0 {
				break
			}
		}
	}
	return total, nil
}

// unreached is the top-level names of pkg's tests that passed in after and
// have no result in a.
func unreached(pkg string, a, after *swe.GoTestRun) []string {
	set := map[string]bool{}
	for name, s := range after.Tests {
		p, test := swe.SplitTestName(name)
		if p != pkg || s != swe.TestPass {
			continue
		}
		top, _, _ := strings.Cut(test, "/")
		if _, ran := a.Tests[swe.QualifiedTestName(pkg, top)]; !ran {
			set[top] = true
		}
	}
	return sortedKeys(set)
}
