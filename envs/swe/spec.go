package swe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/sandbox"
)

// Where things are inside a sandbox.
const (
	// Workdir is the repository, as in SWE-bench's images.
	Workdir = "/testbed"
	// SandboxGoRoot is where the host's Go toolchain is mounted read-only.
	SandboxGoRoot = "/nextstate/go"
	// SandboxGoModCache is where the module cache is mounted read-only.
	SandboxGoModCache = "/nextstate/gomod"
	// SandboxEvalGoCache is where an evaluation sandbox mounts the
	// harness's own build cache (read-write; never in an agent's sandbox).
	SandboxEvalGoCache = "/nextstate/gocache"
	// SandboxAgentGoCache is the agent's build cache, in its sandbox.
	SandboxAgentGoCache = "/root/.cache/go-build"
)

// DefaultImage is the sandbox image of instances that name none, for Go
// and Python alike, on the docker backend: Debian with git, patch, python3
// and pytest (`nextstate image build`); the Go toolchain is mounted. On the
// bwrap backend the default is the host's root, read-only.
const DefaultImage = "nextstate/base"

// Default sandbox limits: Go builds need more than sandbox.DefaultLimits.
var DefaultLimits = sandbox.Limits{MemoryBytes: 4 << 30, CPUs: 2, PIDs: 2048}

// DefaultGoModCache is the module cache Go instances' dependencies are
// fetched into (by `nextstate swe build-go`) and sandboxes mount:
// ~/.cache/nextstate/swe/gomod.
func DefaultGoModCache() string { return filepath.Join(cacheHome(), "nextstate", "swe", "gomod") }

// DefaultWorkDir keeps prepared repositories and the evaluation build
// cache: ~/.cache/nextstate/swe.
func DefaultWorkDir() string { return filepath.Join(cacheHome(), "nextstate", "swe") }

func cacheHome() string {
	if d, err := os.UserCacheDir(); err == nil {
		return d
	}
	return os.TempDir()
}

// DefaultGoRoot is the host's Go toolchain: `go env GOROOT`, else the one
// this binary was built with when it is still there; "" when neither is.
func DefaultGoRoot() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); d != "" {
			return d
		}
	}
	//lint:ignore SA1019 the build's GOROOT is a fallback only
	if d := runtime.GOROOT(); d != "" {
		if _, err := os.Stat(filepath.Join(d, "bin", "go")); err == nil {
			return d
		}
	}
	return ""
}

// GoEnv is the environment of Go commands in a sandbox: the mounted
// toolchain and module cache, nothing fetched (GOPROXY=off, GOSUMDB=off,
// GOTOOLCHAIN=local), modules resolved from the cache (GOFLAGS=-mod=mod
// -buildvcs=false), no workspace file (GOWORK=off), no cgo, and the build
// cache at gocache (GoTestEnv's, with the sandbox's paths). `nextstate swe build-go` runs
// the tests under the same environment.
func GoEnv(gocache string) map[string]string {
	return map[string]string{
		"PATH":        SandboxGoRoot + "/bin:/root/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"GOROOT":      SandboxGoRoot,
		"GOMODCACHE":  SandboxGoModCache,
		"GOCACHE":     gocache,
		"GOPATH":      "/root/go",
		"GOFLAGS":     "-mod=mod -buildvcs=false",
		"GOWORK":      "off",
		"GOPROXY":     "off",
		"GOSUMDB":     "off",
		"GONOSUMDB":   "*",
		"GOTOOLCHAIN": "local",
		"GOTELEMETRY": "off",
		"CGO_ENABLED": "0",
	}
}

// pythonEnv is the environment of Python instances' sandboxes.
func pythonEnv() map[string]string {
	return map[string]string{"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "PIP_NO_INDEX": "1"}
}

// SandboxConfig says how to make an instance's sandboxes.
type SandboxConfig struct {
	// Backend is the sandbox backend's name ("bwrap", "docker"): it
	// decides what an image is.
	Backend string
	// Image overrides the instance's image.
	Image string
	// GoRoot and GoModCache are the host directories mounted read-only
	// into Go instances' sandboxes; empty: DefaultGoRoot,
	// DefaultGoModCache.
	GoRoot     string
	GoModCache string
	// Limits of each sandbox; zero fields take DefaultLimits.
	Limits sandbox.Limits
	Labels map[string]string
}

// imageFor is the sandbox image of an instance on a backend: the
// instance's (or the override), else DefaultImage on docker and the
// host's root on bwrap, where an image is a rootfs directory (a docker
// image name is not one: the host's root is used).
func (c SandboxConfig) imageFor(in *Instance) string {
	img := in.Image
	if c.Image != "" {
		img = c.Image
	}
	if c.Backend == "docker" {
		if img == "" {
			img = DefaultImage
		}
		return img
	}
	if !filepath.IsAbs(img) {
		return ""
	}
	return img
}

// Spec is the sandbox spec of an instance whose repository is in language
// lang. gocache, for Go, is the host directory of an evaluation's build
// cache ("" for an agent's sandbox, whose cache is its own).
func (c SandboxConfig) Spec(in *Instance, lang, gocache string) (sandbox.Spec, error) {
	spec := sandbox.Spec{
		Image:   c.imageFor(in),
		Workdir: Workdir,
		Limits:  c.Limits.Or(DefaultLimits),
		Labels:  sandbox.MergeLabels(c.Labels),
	}
	switch lang {
	case "go":
		root, mod := c.GoRoot, c.GoModCache
		if root == "" {
			root = DefaultGoRoot()
		}
		if mod == "" {
			mod = DefaultGoModCache()
		}
		if root == "" {
			return spec, errors.New("no Go toolchain on this host: install Go or set swe.go_root")
		}
		if _, err := os.Stat(filepath.Join(root, "bin", "go")); err != nil {
			return spec, fmt.Errorf("Go toolchain %s: %w", root, err)
		}
		if fi, err := os.Stat(mod); err != nil || !fi.IsDir() {
			return spec, fmt.Errorf("Go module cache %s is missing: fetch the instances' modules into it "+
				"(nextstate swe build-go does) or set swe.gomodcache", mod)
		}
		spec.Mounts = []sandbox.Mount{
			{Source: root, Target: SandboxGoRoot, ReadOnly: true},
			{Source: mod, Target: SandboxGoModCache, ReadOnly: true},
		}
		spec.Env = GoEnv(SandboxAgentGoCache)
		if gocache != "" {
			if err := os.MkdirAll(gocache, 0o755); err != nil {
				return spec, fmt.Errorf("evaluation build cache: %w", err)
			}
			spec.Mounts = append(spec.Mounts, sandbox.Mount{Source: gocache, Target: SandboxEvalGoCache})
			spec.Env["GOCACHE"] = SandboxEvalGoCache
		}
	case "python":
		spec.Env = pythonEnv()
	default:
		return spec, fmt.Errorf("language %q: want go or python", lang)
	}
	return spec, nil
}

// escapeModulePath is the module cache's form of a module path: each upper
// case letter is "!" and its lower case (golang.org/x/mod/module's
// EscapePath, for valid paths).
func escapeModulePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// moduleCopies lists, relative to the module cache modcache, where it
// holds module itself: its extracted versions (<module>@<version>) and its
// downloads (cache/download/<module>). An agent's sandbox must not see
// them: another version of the repository's own module may hold the fix.
func moduleCopies(modcache, module string) []string {
	if module == "" {
		return nil
	}
	esc := filepath.FromSlash(escapeModulePath(module))
	var out []string
	if ents, err := os.ReadDir(filepath.Join(modcache, filepath.Dir(esc))); err == nil {
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), filepath.Base(esc)+"@") {
				out = append(out, filepath.Join(filepath.Dir(esc), e.Name()))
			}
		}
	}
	dl := filepath.Join("cache", "download", esc)
	if fi, err := os.Stat(filepath.Join(modcache, dl)); err == nil && fi.IsDir() {
		out = append(out, dl)
	}
	return out
}
