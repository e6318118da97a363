package rl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// mixKeys are the fields of a mix in JSON, and the names ParseMix accepts
// for them.
var mixKeys = map[string]string{"c": "c", "gamma": "gamma", "outcome_map": "outcome_map", "outcome": "outcome_map"}

// ParseMix reads a reward mix written as comma-separated name=value pairs,
// as the serve command's --mix takes it: "c=1,gamma=0.9,outcome=2acc-1".
// Names: c (the process reward's weight), gamma (the outcome's discount,
// 0 < gamma ≤ 1), outcome (or outcome_map: identity or 2acc-1). Names not
// given keep DefaultMix's values; "" is the default mix.
func ParseMix(s string) (Mix, error) {
	m := DefaultMix()
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || v == "" {
			return m, fmt.Errorf("reward mix %q: %q is not name=value (names: c, gamma, outcome)", s, kv)
		}
		switch mixKeys[k] {
		case "c", "gamma":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return m, fmt.Errorf("reward mix %q: %s=%q is not a number", s, k, v)
			}
			if k == "c" {
				m.C = f
			} else {
				m.Gamma = f
			}
		case "outcome_map":
			m.OutcomeMap = v
		default:
			return m, fmt.Errorf("reward mix %q: unknown name %q (names: c, gamma, outcome)", s, k)
		}
	}
	return m, m.Validate()
}

// ParseMixJSON reads a reward mix from JSON strictly: an object with the
// fields c, gamma and outcome_map, absent ones taking DefaultMix's
// values; any other field is an error.
func ParseMixJSON(b []byte) (Mix, error) {
	var fields map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&fields); err != nil || fields == nil {
		return Mix{}, fmt.Errorf("reward mix: want an object {\"c\": 1, \"gamma\": 1, \"outcome_map\": \"identity\"}, got %s", b)
	}
	var unknown []string
	for k := range fields {
		if k != "c" && k != "gamma" && k != "outcome_map" {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return Mix{}, fmt.Errorf("reward mix: unknown field(s) %s (accepted: c, gamma, outcome_map)", strings.Join(unknown, ", "))
	}
	var m Mix
	if err := json.Unmarshal(b, &m); err != nil {
		return Mix{}, err
	}
	return m, nil
}
