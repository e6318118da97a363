package swe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/envs/internal/tools"
	"github.com/nextstate-rl/nextstate/sandbox"
)

// MaxFileBytes caps a file the editor reads or writes.
const MaxFileBytes = 4 << 20

// MaxViewBytes caps what one view returns; past it the output is clipped
// with a note to view a range.
const MaxViewBytes = 32 << 10

// snippetLines is how many lines around an edit its result shows.
const snippetLines = 4

// editTimeout bounds each command the editor runs in the sandbox.
const editTimeout = 30 * time.Second

// Editor is the str_replace_based_edit_tool over a sandbox: view, create,
// str_replace, insert and undo_edit on absolute paths, through Exec. It
// keeps each file's earlier contents for undo_edit. An Editor is used by
// one goroutine at a time.
type Editor struct {
	sb      sandbox.Sandbox
	history map[string][]string
}

// NewEditor returns an editor over sb with an empty undo history.
func NewEditor(sb sandbox.Sandbox) *Editor {
	return &Editor{sb: sb, history: map[string][]string{}}
}

// EditError is a mistake of the agent's (a missing file, an old_str that
// is not unique): the call is answered with it and the episode goes on.
// It is the tools' *tools.ToolError.
type EditError = tools.ToolError

func editErr(format string, a ...any) error { return tools.Errorf(format, a...) }

// Run runs one editor command and returns its answer. An *EditError is the
// agent's mistake; other errors are the sandbox's.
func (ed *Editor) Run(ctx context.Context, a EditArgs) (string, error) {
	if msg := checkEdit(&a); msg != "" {
		return "", &EditError{Message: msg}
	}
	p := path.Clean(a.Path)
	switch a.Command {
	case EditView:
		return ed.view(ctx, p, a.ViewRange)
	case EditCreate:
		kind, _, err := ed.stat(ctx, p)
		if err != nil {
			return "", err
		}
		if kind != "none" {
			return "", editErr("%s already exists: create does not overwrite; edit it with str_replace or insert, or remove it with shell_exec first", p)
		}
		if err := ed.write(ctx, p, *a.FileText); err != nil {
			return "", err
		}
		ed.history[p] = append(ed.history[p], "\x00none")
		return fmt.Sprintf("File created successfully at: %s", p), nil
	case EditStrReplace:
		text, err := ed.read(ctx, p)
		if err != nil {
			return "", err
		}
		old, neu := *a.OldStr, ""
		if a.NewStr != nil {
			neu = *a.NewStr
		}
		idx := allIndex(text, old)
		switch len(idx) {
		case 0:
			return "", editErr("No replacement was performed: old_str does not appear verbatim in %s (whitespace and indentation must match exactly).", p)
		case 1:
		default:
			lines := make([]string, len(idx))
			for i, at := range idx {
				lines[i] = strconv.Itoa(strings.Count(text[:at], "\n") + 1)
			}
			return "", editErr("No replacement was performed: old_str appears %d times in %s, in lines %s; include more context to make it unique.",
				len(idx), p, strings.Join(lines, ", "))
		}
		updated := text[:idx[0]] + neu + text[idx[0]+len(old):]
		if err := ed.write(ctx, p, updated); err != nil {
			return "", err
		}
		ed.history[p] = append(ed.history[p], text)
		first := strings.Count(text[:idx[0]], "\n") + 1
		last := first + strings.Count(neu, "\n")
		return fmt.Sprintf("The file %s has been edited. Here's the result of running `cat -n` on a snippet of %s:\n%s\n"+
			"Review the changes and make sure they are as expected. Edit the file again if necessary.",
			p, p, snippet(updated, first, last)), nil
	case EditInsert:
		text, err := ed.read(ctx, p)
		if err != nil {
			return "", err
		}
		lines := splitLines(text)
		n := *a.InsertLine
		if n < 0 || n > len(lines) {
			return "", editErr("insert_line %d is out of range: %s has %d lines; give 0 to %d", n, p, len(lines), len(lines))
		}
		ins := *a.NewStr
		if !strings.HasSuffix(ins, "\n") {
			ins += "\n"
		}
		at := 0
		for _, l := range lines[:n] {
			at += len(l)
		}
		prefix := text[:at]
		if n > 0 && !strings.HasSuffix(prefix, "\n") {
			prefix += "\n" // the last line had no newline
		}
		updated := prefix + ins + text[at:]
		if err := ed.write(ctx, p, updated); err != nil {
			return "", err
		}
		ed.history[p] = append(ed.history[p], text)
		return fmt.Sprintf("The file %s has been edited. Here's the result of running `cat -n` on a snippet of the edited file:\n%s\n"+
			"Review the changes and make sure they are as expected (correct indentation, no duplicate lines). Edit the file again if necessary.",
			p, snippet(updated, n+1, n+strings.Count(ins, "\n"))), nil
	case EditUndo:
		h := ed.history[p]
		if len(h) == 0 {
			return "", editErr("No edit to undo for %s: undo_edit undoes this tool's create, str_replace and insert only", p)
		}
		prev := h[len(h)-1]
		if prev == "\x00none" {
			if _, err := ed.exec(ctx, []string{"rm", "-f", "--", p}, nil); err != nil {
				return "", err
			}
			ed.history[p] = h[:len(h)-1]
			return fmt.Sprintf("Last edit to %s undone: the file it created is removed.", p), nil
		}
		if err := ed.write(ctx, p, prev); err != nil {
			return "", err
		}
		ed.history[p] = h[:len(h)-1]
		return fmt.Sprintf("Last edit to %s undone successfully. Here's the result of running `cat -n` on %s:\n%s", p, p,
			clip(numbered(prev, 1), "")), nil
	}
	return "", editErr("unknown command %q", a.Command)
}

// view shows a file with line numbers, or a directory's files.
func (ed *Editor) view(ctx context.Context, p string, vr []int) (string, error) {
	kind, _, err := ed.stat(ctx, p)
	if err != nil {
		return "", err
	}
	switch kind {
	case "none":
		return "", editErr("The path %s does not exist. Give an absolute path; the repository is %s.", p, Workdir)
	case "dir":
		if vr != nil {
			return "", editErr("view_range applies to files; %s is a directory", p)
		}
		r, err := ed.exec(ctx, []string{"find", p, "-maxdepth", "2", "-not", "-path", "*/.*", "-not", "-name", "__pycache__"}, nil)
		if err != nil {
			return "", err
		}
		list := strings.Split(strings.TrimRight(string(r.Stdout), "\n"), "\n")
		sort.Strings(list)
		return clip(fmt.Sprintf("Here are the files and directories up to 2 levels deep in %s, hidden items excluded:\n%s", p,
			strings.Join(list, "\n")), ""), nil
	}
	text, err := ed.read(ctx, p)
	if err != nil {
		return "", err
	}
	lines := splitLines(text)
	if vr == nil {
		return clip(fmt.Sprintf("Here's the result of running `cat -n` on %s:\n%s", p, numbered(text, 1)),
			"; view a range of lines with view_range"), nil
	}
	start, end := vr[0], vr[1]
	if start < 1 || start > max(len(lines), 1) {
		return "", editErr("view_range start %d is out of range: %s has %d lines, numbered from 1", start, p, len(lines))
	}
	if end == -1 {
		end = len(lines)
	}
	if end < start || end > len(lines) {
		return "", editErr("view_range end %d is out of range: want %d to %d, or -1 for the last line", end, start, len(lines))
	}
	return clip(fmt.Sprintf("Here's the result of running `cat -n` on %s (lines %d-%d):\n%s", p, start, end,
		numbered(strings.Join(lines[start-1:end], ""), start)), "; view a smaller range"), nil
}

// statScript prints what $1 is (file, dir, other or none) and its size.
const statScript = `if [ -d "$1" ]; then echo dir; elif [ -f "$1" ]; then echo file; stat -c %s -- "$1"; ` +
	`elif [ -e "$1" ] || [ -L "$1" ]; then echo other; else echo none; fi`

func (ed *Editor) stat(ctx context.Context, p string) (kind string, size int64, err error) {
	r, err := ed.exec(ctx, []string{"sh", "-c", statScript, "stat", p}, nil)
	if err != nil {
		return "", 0, err
	}
	f := strings.Fields(string(r.Stdout))
	if len(f) == 0 {
		return "", 0, fmt.Errorf("editor: stat %s: %s", p, r.Stderr)
	}
	if len(f) > 1 {
		size, _ = strconv.ParseInt(f[1], 10, 64)
	}
	return f[0], size, nil
}

// read returns a text file's content.
func (ed *Editor) read(ctx context.Context, p string) (string, error) {
	kind, size, err := ed.stat(ctx, p)
	if err != nil {
		return "", err
	}
	switch {
	case kind == "none":
		return "", editErr("The path %s does not exist. Give an absolute path; the repository is %s.", p, Workdir)
	case kind == "dir":
		return "", editErr("%s is a directory; this command works on files (view lists a directory)", p)
	case kind != "file":
		return "", editErr("%s is not a regular file", p)
	case size > MaxFileBytes:
		return "", editErr("%s is %d bytes, more than the editor's %d; use shell_exec (sed, head) for it", p, size, MaxFileBytes)
	}
	r, err := ed.exec(ctx, []string{"cat", "--", p}, nil)
	if err != nil {
		return "", err
	}
	if r.ExitCode != 0 {
		return "", editErr("cannot read %s: %s", p, strings.TrimSpace(string(r.Stderr)))
	}
	if bytes.IndexByte(r.Stdout, 0) >= 0 {
		return "", editErr("%s is a binary file; the editor works on text", p)
	}
	return string(r.Stdout), nil
}

// writeScript writes stdin to $1, making its directory; an existing file
// keeps its mode.
const writeScript = `mkdir -p -- "$(dirname -- "$1")" && cat > "$1"`

func (ed *Editor) write(ctx context.Context, p, content string) error {
	r, err := ed.exec(ctx, []string{"sh", "-c", writeScript, "write", p}, strings.NewReader(content))
	if err != nil {
		return err
	}
	if r.ExitCode != 0 {
		return editErr("cannot write %s: %s", p, strings.TrimSpace(string(r.Stderr)))
	}
	return nil
}

func (ed *Editor) exec(ctx context.Context, argv []string, stdin *strings.Reader) (sandbox.ExecResult, error) {
	req := sandbox.ExecRequest{Cmd: argv, Dir: Workdir, Timeout: editTimeout, MaxOutput: MaxFileBytes + 1}
	if stdin != nil {
		req.Stdin = stdin
	}
	r, err := ed.sb.Exec(ctx, req)
	if err == nil && r.TimedOut {
		err = errors.New("editor: the sandbox did not answer in time")
	}
	return r, err
}

// splitLines splits text into lines that keep their newline (the last
// one may have none).
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	ls := strings.SplitAfter(text, "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// numbered renders text as cat -n does, the first line numbered from.
func numbered(text string, from int) string {
	var b strings.Builder
	for i, l := range splitLines(text) {
		fmt.Fprintf(&b, "%6d\t%s\n", from+i, strings.TrimSuffix(l, "\n"))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// snippet shows lines first..last of text with snippetLines around them.
func snippet(text string, first, last int) string {
	lines := splitLines(text)
	lo := max(first-snippetLines, 1)
	hi := min(last+snippetLines, len(lines))
	if hi < lo {
		return ""
	}
	return numbered(strings.Join(lines[lo-1:hi], ""), lo)
}

// clip cuts a long answer at MaxViewBytes with a note.
func clip(s, hint string) string {
	if len(s) <= MaxViewBytes {
		return s
	}
	cut := strings.LastIndexByte(s[:MaxViewBytes], '\n')
	if cut < 0 {
		cut = MaxViewBytes
	}
	return s[:cut] + fmt.Sprintf("\n<response clipped: %d more bytes%s>", len(s)-cut, hint)
}

// allIndex returns the offsets of every occurrence of sub in s.
func allIndex(s, sub string) []int {
	var out []int
	for off := 0; ; {
		i := strings.Index(s[off:], sub)
		if i < 0 {
			return out
		}
		out = append(out, off+i)
		off += i + max(len(sub), 1)
	}
}
