package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
)

// RandomID returns n random bytes as hex, for sandbox and marker ids.
func RandomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on Linux
	return hex.EncodeToString(b)
}

// IsReserved reports whether a label key is reserved for nextstate
// (LabelPrefix). Task files may not set reserved labels.
func IsReserved(key string) bool { return strings.HasPrefix(key, LabelPrefix) }

// CheckLabels refuses labels that user input (a task file) may not set:
// reserved keys and empty keys.
func CheckLabels(labels map[string]string) error {
	for k := range labels {
		if k == "" {
			return fmt.Errorf("sandbox: empty label key")
		}
		if IsReserved(k) {
			return fmt.Errorf("sandbox: label %q uses the reserved prefix %q", k, LabelPrefix)
		}
	}
	return nil
}

// MergeLabels returns one map with the labels of every argument, later ones
// winning; an empty value removes the key. It never returns nil.
func MergeLabels(ls ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, l := range ls {
		for k, v := range l {
			if v == "" {
				delete(out, k)
				continue
			}
			out[k] = v
		}
	}
	return out
}

// SpecKey identifies the sandboxes a Spec makes for a warm pool: two specs
// with the same key make interchangeable sandboxes. The per-sandbox labels
// LabelSession and LabelPool are not part of it.
func SpecKey(s Spec) string {
	if len(s.Labels) > 0 {
		s.Labels = maps.Clone(s.Labels)
		delete(s.Labels, LabelSession)
		delete(s.Labels, LabelPool)
		delete(s.Labels, LabelOwner)
	}
	b, _ := json.Marshal(s) // maps marshal with sorted keys
	return string(b)
}
