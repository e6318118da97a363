package docker

import (
	"archive/tar"
	"io"
	"sort"
)

func writeTar(w io.Writer, files map[string]string) error {
	tw := tar.NewWriter(w)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := io.WriteString(tw, files[n]); err != nil {
			return err
		}
	}
	return tw.Close()
}
