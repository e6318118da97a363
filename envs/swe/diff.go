package swe

import (
	"sort"
	"strings"
)

// fileDiff is one file's section of a unified diff.
type fileDiff struct {
	// Paths are the file's old and new paths (a/ and b/ stripped; a new
	// or removed file has one, a rename two).
	Paths []string
	Text  string
}

// splitDiff cuts a diff into per-file sections at "diff --git" lines, or,
// for a diff without them (diff -u, a hand-made patch), at a "--- " line
// followed by a "+++ " line and a hunk. Text before the first section (a mail header, a
// commit message) is dropped.
func splitDiff(diff string) []fileDiff {
	lines := strings.SplitAfter(diff, "\n")
	git := strings.Contains(diff, "diff --git ")
	var out []fileDiff
	var cur *strings.Builder
	var paths []string
	flush := func() {
		if cur != nil {
			out = append(out, fileDiff{Paths: dedup(paths), Text: cur.String()})
		}
		cur, paths = nil, nil
	}
	for i, l := range lines {
		start := false
		if git {
			start = strings.HasPrefix(l, "diff --git ")
		} else {
			start = strings.HasPrefix(l, "--- ") && i+2 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ") &&
				strings.HasPrefix(lines[i+2], "@@ ")
		}
		if start {
			flush()
			cur = &strings.Builder{}
			if git {
				paths = append(paths, gitHeaderPaths(l)...)
			}
		}
		if cur == nil {
			continue
		}
		switch {
		case strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ "):
			if !inHunk(cur.String()) {
				if p := patchPath(l[4:]); p != "" {
					paths = append(paths, p)
				}
			}
		case strings.HasPrefix(l, "rename from "), strings.HasPrefix(l, "copy from "):
			paths = append(paths, strings.TrimSpace(l[strings.Index(l, " from ")+6:]))
		case strings.HasPrefix(l, "rename to "), strings.HasPrefix(l, "copy to "):
			paths = append(paths, strings.TrimSpace(l[strings.Index(l, " to ")+4:]))
		}
		cur.WriteString(l)
	}
	flush()
	return out
}

// inHunk reports whether a section has reached its first hunk.
func inHunk(section string) bool { return strings.Contains(section, "\n@@ ") }

// gitHeaderPaths reads "diff --git a/x b/y" (unquoted paths without " b/"
// inside them; others are taken from the ---/+++ lines).
func gitHeaderPaths(l string) []string {
	rest := strings.TrimSuffix(strings.TrimPrefix(l, "diff --git "), "\n")
	if strings.HasPrefix(rest, `"`) {
		return nil
	}
	a, b, ok := strings.Cut(rest, " b/")
	if !ok || !strings.HasPrefix(a, "a/") {
		return nil
	}
	return []string{strings.TrimPrefix(a, "a/"), b}
}

// patchPath reads the path of a ---/+++ line: /dev/null is none, a/ and
// b/ prefixes go, a tab-separated timestamp goes.
func patchPath(s string) string {
	s = strings.TrimRight(s, "\r\n")
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	s = strings.Trim(s, `"`)
	if s == "/dev/null" || s == "" {
		return ""
	}
	if strings.HasPrefix(s, "a/") || strings.HasPrefix(s, "b/") {
		s = s[2:]
	}
	return s
}

func dedup(ps []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range ps {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// DiffFiles lists the files a diff touches (old and new paths), sorted.
func DiffFiles(diff string) []string {
	seen := map[string]bool{}
	for _, f := range splitDiff(diff) {
		for _, p := range f.Paths {
			seen[p] = true
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// FilterDiff drops from diff every file section that touches one of
// protected (the files test_patch touches: an agent cannot make the tests
// pass by editing them) and returns what is left and the dropped files,
// sorted.
func FilterDiff(diff string, protected []string) (kept string, dropped []string) {
	prot := map[string]bool{}
	for _, p := range protected {
		prot[p] = true
	}
	var b strings.Builder
	seen := map[string]bool{}
	for _, f := range splitDiff(diff) {
		hit := false
		for _, p := range f.Paths {
			if prot[p] {
				hit = true
				if !seen[p] {
					seen[p] = true
					dropped = append(dropped, p)
				}
			}
		}
		if !hit {
			b.WriteString(f.Text)
		}
	}
	sort.Strings(dropped)
	return b.String(), dropped
}
