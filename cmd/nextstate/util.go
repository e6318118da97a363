package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
)

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// defaultDataDir is where serve and export keep the store unless told.
func defaultDataDir() string {
	if d := os.Getenv("NEXTSTATE_DATA"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "nextstate")
	}
	return ".nextstate"
}

// readToken returns the token from a flag or a token file.
func readToken(token, file string) (string, error) {
	if token != "" && file != "" {
		return "", fmt.Errorf("give --token or --token-file, not both")
	}
	if file == "" {
		if token == "" {
			token = os.Getenv("NEXTSTATE_TOKEN")
		}
		return token, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("reading the token file: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("token file %s is empty", file)
	}
	return t, nil
}

// writeReadyFile writes addr to path (when path is not empty) once a server
// listens: written whole, then renamed, so a watcher never reads half of it.
func writeReadyFile(path, addr string) error {
	if path == "" {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(addr+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// defaultGCPercent is the garbage collector's target (GOGC) of the
// long-running commands, serve and bench ws: the heap grows to five times
// what is live before the next collection. A collection marks every open
// session's and connection's state, and requests slow down while it
// marks; with 10,000 sessions open, collections four times rarer than
// with Go's default (100) are what keeps bench ws's p99 step latency
// under 50 ms (docs/architecture.md, Performance), for a heap peak about
// 2.5 times larger.
const defaultGCPercent = 400

// gcPercentUsage is the --gc-percent flag's help.
const gcPercentUsage = "garbage collector target of this process, as GOGC: the heap grows to (1 + N/100) times what is live between collections (-1: off); the GOGC environment variable, when set, wins"

// setGCPercent sets this process's garbage collector target to n, unless
// GOGC is set in the environment, which wins.
func setGCPercent(n int) error {
	if n == 0 || n < -1 {
		return fmt.Errorf("--gc-percent %d: want a percent above 0, or -1 to turn the collector off", n)
	}
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(n)
	}
	return nil
}
