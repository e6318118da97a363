package image

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// HostMirror returns the Debian archive the host's apt sources use for
// suite (/etc/apt/sources.list and the .list and .sources files of
// /etc/apt/sources.list.d), or DefaultMirror when they name none. Security
// and update suites do not count; they have other archives.
func HostMirror(suite string) string {
	return mirrorFrom("/etc/apt", suite)
}

func mirrorFrom(aptDir, suite string) string {
	files := []string{filepath.Join(aptDir, "sources.list")}
	for _, pat := range []string{"*.list", "*.sources"} {
		m, _ := filepath.Glob(filepath.Join(aptDir, "sources.list.d", pat))
		slices.Sort(m)
		files = append(files, m...)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var uri string
		if strings.HasSuffix(f, ".sources") {
			uri = mirrorDeb822(string(data), suite)
		} else {
			uri = mirrorOneLine(string(data), suite)
		}
		if uri != "" {
			return strings.TrimRight(uri, "/")
		}
	}
	return DefaultMirror
}

// mirrorOneLine reads "deb [options] URI suite components..." lines.
func mirrorOneLine(text, suite string) string {
	for _, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "deb" {
			continue
		}
		f = f[1:]
		if strings.HasPrefix(f[0], "[") { // options: [arch=amd64 signed-by=...]
			for len(f) > 0 && !strings.HasSuffix(f[0], "]") {
				f = f[1:]
			}
			if len(f) > 0 {
				f = f[1:]
			}
		}
		if len(f) >= 2 && f[1] == suite && httpURI(f[0]) {
			return f[0]
		}
	}
	return ""
}

// mirrorDeb822 reads deb822 stanzas (Types:, URIs:, Suites:).
func mirrorDeb822(text, suite string) string {
	for _, stanza := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		fields := map[string][]string{}
		for _, line := range strings.Split(stanza, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			k, v, ok := strings.Cut(line, ":")
			if !ok || strings.HasPrefix(line, " ") {
				continue
			}
			fields[strings.ToLower(strings.TrimSpace(k))] = strings.Fields(v)
		}
		if en := fields["enabled"]; len(en) > 0 && strings.EqualFold(en[0], "no") {
			continue
		}
		if !slices.Contains(fields["types"], "deb") || !slices.Contains(fields["suites"], suite) {
			continue
		}
		for _, u := range fields["uris"] {
			if httpURI(u) {
				return u
			}
		}
	}
	return ""
}

func httpURI(u string) bool {
	return strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")
}
