package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
