package terminal

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// DefaultWorkdir is the working directory of a task whose Dockerfile sets
// no WORKDIR: /app, where Terminal-Bench's base images
// (ghcr.io/laude-institute/t-bench/...) work, so that a task written for
// them finds its files, and runs its tests, where it would there. With
// docker, a FROM image that is not on the engine is replaced by the base
// image followed by WORKDIR /app (sandbox.ImageBuild.BaseWorkdir).
const DefaultWorkdir = "/app"

// Dockerfile is what the bwrap backend reads of a task's Dockerfile: the
// last stage's instructions, in order. With Docker the file is built as it
// is; with bubblewrap nextstate honours only:
//
//   - FROM: recorded, not used (the sandbox's root is the host's, read-only);
//     each stage starts in DefaultWorkdir, as on Terminal-Bench's images;
//   - WORKDIR: the working directory; the last one is the sandbox's
//     writable workspace (DefaultWorkdir when there is none);
//   - ENV (and ARG defaults, for substitution): the commands' environment;
//   - COPY and ADD of files from the task folder (ADD of a URL and COPY
//     --from another stage are errors; ADD does not unpack archives;
//     destinations must be writable: the workspace, /tmp or /root). A
//     copy of the folder itself leaves out tests/, run-tests.sh, the
//     solution, task.yaml and the Dockerfile;
//   - RUN: run in the sandbox in order, in the current WORKDIR, as the
//     sandbox's user; the root file system is read-only, so RUN steps that
//     install packages fail: such a task needs the docker backend.
//
// USER, EXPOSE, CMD, ENTRYPOINT, LABEL, VOLUME, SHELL, HEALTHCHECK and the
// like are ignored.
type Dockerfile struct {
	From string
	// Workdir is the last WORKDIR; empty when the Dockerfile sets none
	// (the sandbox then works in DefaultWorkdir: WorkingDir).
	Workdir string
	Env     map[string]string
	Steps   []DockerStep
}

// DockerStep is one instruction the bwrap backend applies.
type DockerStep struct {
	Op      string   // "COPY", "RUN", "WORKDIR"
	Sources []string // COPY: paths in the task folder
	Dest    string   // COPY: absolute destination; WORKDIR: the directory
	Script  string   // RUN: a shell script
	Argv    []string // RUN: the exec form
	Env     map[string]string
	Dir     string // the WORKDIR it runs in
	Line    int
}

// WorkingDir is the sandbox's working directory: the last WORKDIR, or
// DefaultWorkdir.
func (d *Dockerfile) WorkingDir() string {
	if d.Workdir == "" {
		return DefaultWorkdir
	}
	return d.Workdir
}

// defaultPath is the PATH an image without ENV PATH has.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ParseDockerfile reads the instructions of a Dockerfile's last stage.
func ParseDockerfile(b []byte) (*Dockerfile, error) {
	d := &Dockerfile{Env: map[string]string{}}
	args := map[string]string{}
	dir := DefaultWorkdir
	stages := 0
	for _, ins := range splitInstructions(string(b)) {
		op, rest := ins.op, ins.rest
		fail := func(format string, a ...any) error {
			return fmt.Errorf("Dockerfile line %d (%s): %s", ins.line, op, fmt.Sprintf(format, a...))
		}
		lookup := func(k string) (string, bool) {
			if v, ok := d.Env[k]; ok {
				return v, true
			}
			if v, ok := args[k]; ok {
				return v, true
			}
			if k == "PATH" {
				return defaultPath, true
			}
			return "", false
		}
		switch op {
		case "ARG":
			k, v, _ := strings.Cut(rest, "=")
			args[strings.TrimSpace(k)] = unquote(expand(strings.TrimSpace(v), lookup))
		case "FROM":
			f := strings.Fields(expand(rest, lookup))
			var img []string
			for _, x := range f {
				if !strings.HasPrefix(x, "--") {
					img = append(img, x)
				}
			}
			if len(img) == 0 {
				return nil, fail("no image")
			}
			stages++
			// A new stage starts over.
			*d = Dockerfile{From: img[0], Env: map[string]string{}}
			dir = DefaultWorkdir
		case "WORKDIR":
			w := expand(unquote(strings.TrimSpace(rest)), lookup)
			if !path.IsAbs(w) {
				w = path.Join(dir, w)
			}
			dir = path.Clean(w)
			d.Workdir = dir
			d.Steps = append(d.Steps, DockerStep{Op: "WORKDIR", Dest: dir, Dir: dir, Line: ins.line})
		case "ENV":
			kvs, err := parseEnv(rest)
			if err != nil {
				return nil, fail("%v", err)
			}
			for _, kv := range kvs {
				d.Env[kv[0]] = expand(kv[1], lookup)
			}
		case "COPY", "ADD":
			flags, words, err := parseWords(rest)
			if err != nil {
				return nil, fail("%v", err)
			}
			for _, f := range flags {
				if strings.HasPrefix(f, "--from") {
					return nil, fail("COPY --from another stage is not supported without docker")
				}
			}
			if len(words) < 2 {
				return nil, fail("want sources and a destination")
			}
			dest := expand(words[len(words)-1], lookup)
			trailing := strings.HasSuffix(dest, "/")
			if !path.IsAbs(dest) {
				dest = path.Join(dir, dest)
			}
			dest = path.Clean(dest)
			if trailing || len(words) > 2 {
				dest += "/"
			}
			var srcs []string
			for _, s := range words[:len(words)-1] {
				s = expand(s, lookup)
				if strings.Contains(s, "://") {
					return nil, fail("ADD of a URL is not supported: the sandbox has no network")
				}
				c := path.Clean(s)
				if c == ".." || strings.HasPrefix(c, "../") || path.IsAbs(c) {
					return nil, fail("source %q is outside the task folder", s)
				}
				srcs = append(srcs, c)
			}
			d.Steps = append(d.Steps, DockerStep{Op: "COPY", Sources: srcs, Dest: dest, Dir: dir, Line: ins.line})
		case "RUN":
			st := DockerStep{Op: "RUN", Dir: dir, Env: copyEnv(d.Env), Line: ins.line}
			r := strings.TrimSpace(rest)
			for strings.HasPrefix(r, "--") { // --mount=..., --network=...
				_, after, _ := strings.Cut(r, " ")
				r = strings.TrimSpace(after)
			}
			if strings.HasPrefix(r, "[") {
				if err := json.Unmarshal([]byte(r), &st.Argv); err != nil {
					return nil, fail("exec form is not a JSON list of strings")
				}
			} else {
				st.Script = r
			}
			d.Steps = append(d.Steps, st)
		}
	}
	if stages == 0 && len(d.Steps) > 0 {
		return nil, fmt.Errorf("Dockerfile has no FROM")
	}
	return d, nil
}

type instruction struct {
	op, rest string
	line     int
}

// splitInstructions joins continued lines and drops comments and blank
// lines. Heredocs are not supported.
func splitInstructions(s string) []instruction {
	var out []instruction
	var cur strings.Builder
	start := 0
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimRight(line, "\r")
		t := strings.TrimSpace(line)
		if cur.Len() == 0 {
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			start = i + 1
		} else if strings.HasPrefix(t, "#") {
			continue // a comment inside a continued instruction
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\"))
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(line)
		text := strings.TrimSpace(cur.String())
		cur.Reset()
		op, rest, _ := strings.Cut(text, " ")
		if i := strings.IndexByte(op, '\t'); i >= 0 {
			op, rest = text[:i], text[i+1:]
		}
		out = append(out, instruction{op: strings.ToUpper(op), rest: strings.TrimSpace(rest), line: start})
	}
	if cur.Len() > 0 {
		text := strings.TrimSpace(cur.String())
		op, rest, _ := strings.Cut(text, " ")
		out = append(out, instruction{op: strings.ToUpper(op), rest: strings.TrimSpace(rest), line: start})
	}
	return out
}

// parseWords splits COPY arguments: leading --flags, then words, or the
// JSON list form.
func parseWords(s string) (flags, words []string, err error) {
	s = strings.TrimSpace(s)
	for strings.HasPrefix(s, "--") {
		f, rest, _ := strings.Cut(s, " ")
		flags = append(flags, f)
		s = strings.TrimSpace(rest)
	}
	if strings.HasPrefix(s, "[") {
		if err := json.Unmarshal([]byte(s), &words); err != nil {
			return nil, nil, fmt.Errorf("the JSON form is not a list of strings")
		}
		return flags, words, nil
	}
	for _, w := range strings.Fields(s) {
		words = append(words, unquote(w))
	}
	return flags, words, nil
}

// parseEnv reads "K=V K2=\"v 2\"" or the legacy "K value with spaces".
func parseEnv(s string) ([][2]string, error) {
	s = strings.TrimSpace(s)
	first, rest, _ := strings.Cut(s, " ")
	if !strings.Contains(first, "=") {
		if first == "" {
			return nil, fmt.Errorf("ENV needs a name")
		}
		return [][2]string{{first, strings.TrimSpace(rest)}}, nil
	}
	var out [][2]string
	for len(s) > 0 {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return nil, fmt.Errorf("ENV %q: want NAME=value", s)
		}
		k := s[:eq]
		s = s[eq+1:]
		var v strings.Builder
		var quote byte
		i := 0
		for ; i < len(s); i++ {
			c := s[i]
			switch {
			case quote != 0 && c == quote:
				quote = 0
			case quote == 0 && (c == '"' || c == '\''):
				quote = c
			case c == '\\' && i+1 < len(s) && quote != '\'':
				i++
				v.WriteByte(s[i])
			case quote == 0 && (c == ' ' || c == '\t'):
				goto done
			default:
				v.WriteByte(c)
			}
		}
	done:
		out = append(out, [2]string{k, v.String()})
		s = strings.TrimSpace(s[i:])
	}
	return out, nil
}

// expand substitutes $VAR and ${VAR} (and ${VAR:-default}).
func expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) && s[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		if c != '$' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		if s[i+1] == '{' {
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				b.WriteString(s[i:])
				break
			}
			name := s[i+2 : i+end]
			def := ""
			if k, d, ok := strings.Cut(name, ":-"); ok {
				name, def = k, d
			}
			if v, ok := lookup(name); ok && v != "" {
				b.WriteString(v)
			} else {
				b.WriteString(def)
			}
			i += end
			continue
		}
		j := i + 1
		for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || j > i+1 && s[j] >= '0' && s[j] <= '9') {
			j++
		}
		if j == i+1 {
			b.WriteByte(c)
			continue
		}
		v, _ := lookup(s[i+1 : j])
		b.WriteString(v)
		i = j - 1
	}
	return b.String()
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

func copyEnv(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
