package image

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

func TestMirrorFrom(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sources.list.d"), 0o755)
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := mirrorFrom(dir, "bookworm"); got != DefaultMirror {
		t.Errorf("no sources: %q", got)
	}
	write("sources.list.d/debian.sources", `Types: deb
# a comment
URIs: http://security.example/debian-security
Suites: bookworm-security
Components: main

Types: deb deb-src
URIs: http://mirror.example/debian/
Suites: bookworm bookworm-updates
Components: main
`)
	if got := mirrorFrom(dir, "bookworm"); got != "http://mirror.example/debian" {
		t.Errorf("deb822: %q", got)
	}
	if got := mirrorFrom(dir, "trixie"); got != DefaultMirror {
		t.Errorf("another suite: %q", got)
	}
	write("sources.list", "# deb http://old.example/debian bookworm main\ndeb [arch=amd64 signed-by=/k.gpg] http://one.example/debian bookworm main contrib\n")
	if got := mirrorFrom(dir, "bookworm"); got != "http://one.example/debian" {
		t.Errorf("one-line with options: %q", got)
	}
}

func TestVersion(t *testing.T) {
	a := BaseOptions{}.Version()
	if a != (BaseOptions{Mirror: "http://elsewhere.example/debian"}).Version() {
		t.Errorf("the mirror changed the version")
	}
	rev := slices.Clone(Packages)
	slices.Reverse(rev)
	if a != (BaseOptions{Packages: rev}).Version() {
		t.Errorf("package order changed the version")
	}
	if a == (BaseOptions{Packages: append(slices.Clone(Packages), "cowsay")}).Version() {
		t.Errorf("a package more did not change the version")
	}
	if !strings.HasPrefix(a, DefaultSuite+"-") {
		t.Errorf("version %q", a)
	}
}

func TestContextFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"Dockerfile", "a.txt", "tests/test_x.py", "build/out.o", "keep/x.log", "y.log"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644)
	}
	os.WriteFile(filepath.Join(dir, ".dockerignore"), []byte("# comment\nbuild\n*.log\n**/x.log\n!keep/x.log\nDockerfile\n"), 0o644)
	files, err := contextFiles(dir, "Dockerfile", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".dockerignore", "Dockerfile", "a.txt", "keep", "keep/x.log", "tests", "tests/test_x.py"}
	if !slices.Equal(files, want) {
		t.Errorf("files %v, want %v", files, want)
	}
	// Exclude wins over a .dockerignore "!" line and keeps hidden tests out.
	files, err = contextFiles(dir, "Dockerfile", []string{"tests", "keep"})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{".dockerignore", "Dockerfile", "a.txt"}
	if !slices.Equal(files, want) {
		t.Errorf("with Exclude: files %v, want %v", files, want)
	}
}

func TestSanitizeName(t *testing.T) {
	for in, want := range map[string]string{"Hello World!": "hello-world", "--x--": "x", "": "task", "a.b_c-d": "a.b_c-d"} {
		if got := sanitizeName(in); got != want {
			t.Errorf("sanitizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func engine(t *testing.T) *client.Client {
	t.Helper()
	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		t.Skipf("no docker engine answers (%v): scripts/deps.sh installs and starts one", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestImport imports a one-file rootfs and checks the image's config.
func TestImport(t *testing.T) {
	cli := engine(t)
	ctx := testCtx(t)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "hello.txt", Mode: 0o644, Size: 5, Typeflag: tar.TypeReg})
	tw.Write([]byte("hello"))
	tw.Close()
	p := filepath.Join(t.TempDir(), "rootfs.tar")
	os.WriteFile(p, buf.Bytes(), 0o644)
	ref, ref2 := "nextstate-test/import:a", "nextstate-test/import:b"
	if err := Import(ctx, cli, p, ref, ref2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cli.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{})
		cli.ImageRemove(context.Background(), ref2, client.ImageRemoveOptions{})
	})
	ins, err := cli.ImageInspect(ctx, ref2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ins.Config.Cmd, []string{"/bin/bash"}) || !slices.Contains(ins.Config.Env, "LANG=C.UTF-8") {
		t.Errorf("config: cmd %v env %v", ins.Config.Cmd, ins.Config.Env)
	}
}

// TestBuildBasePresent: with the image present, BuildBase only tags it.
// `make image` (nextstate image build) made it; this test does not run
// debootstrap.
func TestBuildBasePresent(t *testing.T) {
	cli := engine(t)
	ctx := testCtx(t)
	want := Repo + ":" + BaseOptions{}.Version()
	if ok, _ := Exists(ctx, cli, want); !ok {
		t.Skipf("%s is not built: `nextstate image build` (make image) builds it", want)
	}
	var log bytes.Buffer
	ref, err := BuildBase(ctx, cli, BaseOptions{Log: &log, CacheDir: t.TempDir()})
	if err != nil || ref != want {
		t.Fatalf("BuildBase: %q, %v", ref, err)
	}
	if !strings.Contains(log.String(), "is present") {
		t.Errorf("log: %s", log.String())
	}
	a, _ := cli.ImageInspect(ctx, Base)
	b, _ := cli.ImageInspect(ctx, want)
	if a.ID != b.ID {
		t.Errorf("%s is not %s", Base, want)
	}
}

// TestBuildTask builds a task whose FROM names an image on a registry,
// with the base image in its place, and reads the result back.
func TestBuildTask(t *testing.T) {
	cli := engine(t)
	ctx := testCtx(t)
	if ok, _ := Exists(ctx, cli, Base); !ok {
		t.Skipf("%s is missing: `nextstate image build` (make image) builds it", Base)
	}
	dir := filepath.Join(t.TempDir(), "My Task")
	os.MkdirAll(filepath.Join(dir, "tests"), 0o755)
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(`# a task
FROM registry.example.invalid/nextstate/missing:1 AS build
RUN echo built > /built.txt
FROM build
COPY data.txt /data.txt
WORKDIR /app
`), 0o644)
	os.WriteFile(filepath.Join(dir, "data.txt"), []byte("data\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "tests", "test_secret.py"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, ".dockerignore"), []byte("tests\n"), 0o644)

	if _, err := BuildTask(ctx, cli, dir, TaskOptions{}); err == nil || !strings.Contains(err.Error(), "--base-image") {
		t.Fatalf("a missing FROM with no base image: %v", err)
	}
	var log bytes.Buffer
	ref, err := BuildTask(ctx, cli, dir, TaskOptions{BaseImage: Base, Log: &log})
	if err != nil {
		t.Fatalf("BuildTask: %v\n%s", err, log.String())
	}
	t.Cleanup(func() {
		cli.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	})
	if !strings.HasPrefix(ref, TaskRepo+"/my-task:") {
		t.Errorf("ref %q", ref)
	}
	ins, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if ins.Config.WorkingDir != "/app" || ins.Config.Labels["nextstate.task"] != "My Task" {
		t.Errorf("config: workdir %q labels %v", ins.Config.WorkingDir, ins.Config.Labels)
	}
	got := readFiles(t, cli, ref, "/built.txt", "/data.txt", "/tests")
	if got["/built.txt"] != "built\n" || got["/data.txt"] != "data\n" || got["/tests"] != "missing" {
		t.Errorf("image content: %v", got)
	}
	// Unchanged content: the same tag, no build.
	log.Reset()
	again, err := BuildTask(ctx, cli, dir, TaskOptions{BaseImage: Base, Log: &log})
	if err != nil || again != ref || !strings.Contains(log.String(), "is present") {
		t.Errorf("rebuild: %q %v %q", again, err, log.String())
	}
	// Changed content: another tag.
	os.WriteFile(filepath.Join(dir, "data.txt"), []byte("data 2\n"), 0o644)
	ref2, err := BuildTask(ctx, cli, dir, TaskOptions{BaseImage: Base})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cli.ImageRemove(context.Background(), ref2, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	})
	if ref2 == ref {
		t.Errorf("changed content, same tag %s", ref)
	}
}

// TestBuildTaskBaseWorkdir: with BaseWorkdir, a stage built from the base
// image in place of a missing FROM starts in that directory, as
// Terminal-Bench's base images start in /app: a Dockerfile with no WORKDIR
// of its own copies and runs there, and the image works there. A FROM that
// is on the engine gets no WORKDIR.
func TestBuildTaskBaseWorkdir(t *testing.T) {
	cli := engine(t)
	ctx := testCtx(t)
	if ok, _ := Exists(ctx, cli, Base); !ok {
		t.Skipf("%s is missing: `nextstate image build` (make image) builds it", Base)
	}
	dir := filepath.Join(t.TempDir(), "tbench-like")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\nCOPY data.txt data.txt\nRUN pwd > where.txt\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "data.txt"), []byte("data\n"), 0o644)
	var log bytes.Buffer
	ref, err := BuildTask(ctx, cli, dir, TaskOptions{BaseImage: Base, BaseWorkdir: "/app", Log: &log})
	if err != nil {
		t.Fatalf("BuildTask: %v\n%s", err, log.String())
	}
	t.Cleanup(func() {
		cli.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	})
	ins, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if ins.Config.WorkingDir != "/app" {
		t.Errorf("workdir %q, want /app", ins.Config.WorkingDir)
	}
	got := readFiles(t, cli, ref, "/app/data.txt", "/app/where.txt")
	if got["/app/data.txt"] != "data\n" || got["/app/where.txt"] != "/app\n" {
		t.Errorf("image content: %v; want data.txt copied to and RUN run in /app", got)
	}

	// FROM the base image itself: it is on the engine, so no WORKDIR.
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM "+Base+"\nCOPY data.txt data.txt\n"), 0o644)
	ref2, err := BuildTask(ctx, cli, dir, TaskOptions{BaseImage: Base, BaseWorkdir: "/app"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cli.ImageRemove(context.Background(), ref2, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	})
	if ins, err := cli.ImageInspect(ctx, ref2); err != nil || ins.Config.WorkingDir != "" {
		t.Errorf("FROM an image on the engine: workdir %q (%v), want the base image's own (none)", ins.Config.WorkingDir, err)
	}
}

// readFiles reads files of an image from a created (never started)
// container; a missing one reads "missing".
func readFiles(t *testing.T, cli *client.Client, ref string, paths ...string) map[string]string {
	t.Helper()
	ctx := testCtx(t)
	c, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: ref}, HostConfig: &container.HostConfig{NetworkMode: "none"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
	out := map[string]string{}
	for _, p := range paths {
		res, err := cli.CopyFromContainer(ctx, c.ID, client.CopyFromContainerOptions{SourcePath: p})
		if err != nil {
			out[p] = "missing"
			continue
		}
		tr := tar.NewReader(res.Content)
		if _, err := tr.Next(); err == nil {
			b, _ := io.ReadAll(tr)
			out[p] = string(b)
		}
		res.Content.Close()
	}
	return out
}

// A failed build's error carries the build's output: the failing step and
// what it printed, not only the engine's last words.
func TestReadStreamErrorHasOutput(t *testing.T) {
	stream := `{"stream":"Step 1/2 : FROM nextstate/base\n"}
{"stream":" ---\u003e 1a2b3c\n"}
{"stream":"Step 2/2 : RUN make -C /app\n"}
{"stream":"make: *** No targets specified and no makefile found.  Stop.\n"}
{"errorDetail":{"code":2,"message":"The command '/bin/sh -c make -C /app' returned a non-zero code: 2"},"error":"The command '/bin/sh -c make -C /app' returned a non-zero code: 2"}
`
	var log bytes.Buffer
	err := readStream(strings.NewReader(stream), &log)
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("got %v, want a *BuildError", err)
	}
	for _, want := range []string{"returned a non-zero code: 2", "Step 2/2 : RUN make -C /app", "No targets specified"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %s", want, err)
		}
	}
	if !strings.Contains(log.String(), "No targets specified") {
		t.Errorf("the log lacks the output: %q", log.String())
	}
	// A long build keeps the end of its output, marked as cut.
	var long strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&long, "{\"stream\":\"line %d of the build\\n\"}\n", i)
	}
	long.WriteString(`{"errorDetail":{"message":"failed"}}` + "\n")
	err = readStream(strings.NewReader(long.String()), io.Discard)
	if !errors.As(err, &be) || len(be.Output) > MaxErrorOutput+100 || !strings.Contains(be.Output, "line 1999 of the build") ||
		!strings.Contains(be.Output, "earlier output cut") || strings.Contains(be.Output, "line 0 of") {
		t.Errorf("a long build's output: %d bytes, %v", len(be.Output), err)
	}
}
