package telecom

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2"
)

// pyTime is a date or a datetime of a record, as str() writes it (what
// tau2's hash and results show): "2025-02-25" or "2025-01-20 14:30:00".
type pyTime struct {
	s    string
	date bool
}

var (
	dateRE     = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	datetimeRE = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?(Z|[+-]\d{2}:?\d{2})?)?$`)
)

// parseTime reads a date (YYYY-MM-DD) or, for a datetime field, an ISO
// 8601 date-time as pydantic does (the time, its seconds, fraction and
// offset optional), into str()'s form.
func parseTime(s string, datetime bool) (pyTime, error) {
	if !datetime {
		if !dateRE.MatchString(s) || !validDate(s) {
			return pyTime{}, fmt.Errorf("%q is not a date (YYYY-MM-DD)", s)
		}
		return pyTime{s: s, date: true}, nil
	}
	m := datetimeRE.FindStringSubmatch(s)
	if m == nil || !validDate(m[1]) {
		return pyTime{}, fmt.Errorf("%q is not a datetime (YYYY-MM-DDTHH:MM:SS)", s)
	}
	hh, mm, ss := orZero(m[2]), orZero(m[3]), orZero(m[4])
	if atoi(hh) > 23 || atoi(mm) > 59 || atoi(ss) > 59 {
		return pyTime{}, fmt.Errorf("%q is not a datetime: the time is out of range", s)
	}
	out := m[1] + " " + hh + ":" + mm + ":" + ss
	if f := m[5]; f != "" && strings.Trim(f, "0") != "" {
		out += "." + f + strings.Repeat("0", 6-len(f))
	}
	switch off := m[6]; {
	case off == "Z":
		out += "+00:00"
	case off != "":
		off = strings.Replace(off, ":", "", 1)
		out += off[:3] + ":" + off[3:]
	}
	return pyTime{s: out}, nil
}

func orZero(s string) string {
	if s == "" {
		return "00"
	}
	return s
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func validDate(s string) bool {
	y, m, d := atoi(s[:4]), atoi(s[5:7]), atoi(s[8:10])
	if y < 1 || m < 1 || m > 12 || d < 1 {
		return false
	}
	days := []int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[m-1]
	if m == 2 && (y%4 == 0 && y%100 != 0 || y%400 == 0) {
		days = 29
	}
	return d <= days
}

// reader reads a JSON object into a record as its pydantic model does
// (extra fields forbidden), collecting what is wrong, each problem with
// its path (customers[0].address.city).
type reader struct {
	path    string
	members map[string]json.RawMessage
	keys    []string
	used    map[string]bool
	errs    *[]string
}

func newReader(model string, j []byte) *reader {
	var errs []string
	r := &reader{path: model, errs: &errs}
	r.load(j)
	return r
}

func (r *reader) load(j []byte) {
	r.members, r.used = map[string]json.RawMessage{}, map[string]bool{}
	if err := tau2.EachMember(j, func(k string, v json.RawMessage) error {
		if _, dup := r.members[k]; !dup {
			r.keys = append(r.keys, k)
		}
		r.members[k] = v
		return nil
	}); err != nil {
		r.failf("want an object: %v", err)
	}
}

func (r *reader) sub(path string, j []byte) *reader {
	s := &reader{path: path, errs: r.errs}
	s.load(j)
	return s
}

func (r *reader) failf(format string, args ...any) {
	*r.errs = append(*r.errs, r.path+": "+fmt.Sprintf(format, args...))
}

func (r *reader) has(k string) bool { _, ok := r.members[k]; return ok }

// get returns a member's value; ok is false when it is absent or null
// (null reported unless nullable).
func (r *reader) get(k string, required, nullable bool) (json.RawMessage, bool) {
	r.used[k] = true
	v, ok := r.members[k]
	if !ok {
		if required {
			r.failf("%s is missing", k)
		}
		return nil, false
	}
	if string(bytes.TrimSpace(v)) == "null" {
		if !nullable {
			r.failf("%s: null is not allowed", k)
		}
		return nil, false
	}
	return v, true
}

func (r *reader) str(k string, dst *string) {
	if v, ok := r.get(k, true, false); ok && json.Unmarshal(v, dst) != nil {
		r.failf("%s: want a string, not %s", k, v)
	}
}

func (r *reader) optStr(k string, dst **string) {
	if v, ok := r.get(k, false, true); ok {
		var s string
		if json.Unmarshal(v, &s) != nil {
			r.failf("%s: want a string or null, not %s", k, v)
			return
		}
		*dst = &s
	}
}

// number reads a JSON number (a whole one too, as a float).
func (r *reader) number(k string, v json.RawMessage) (float64, bool) {
	n, err := numOf(v)
	if err != nil || math.IsInf(n.f, 0) {
		r.failf("%s: want a number, not %s", k, v)
		return 0, false
	}
	return n.f, true
}

func (r *reader) float(k string, dst *float64) {
	if v, ok := r.get(k, true, false); ok {
		if f, ok := r.number(k, v); ok {
			*dst = f
		}
	}
}

func (r *reader) floatOr(k string, dst *float64, def float64) {
	*dst = def
	if v, ok := r.get(k, false, false); ok {
		if f, ok := r.number(k, v); ok {
			*dst = f
		}
	}
}

// integer reads an int field: a whole number (2.0 too, as pydantic takes it).
func (r *reader) integer(k string, dst *int, def int) {
	*dst = def
	if v, ok := r.get(k, false, false); ok {
		f, ok := r.number(k, v)
		if ok && (f != math.Trunc(f) || math.Abs(f) > 1<<53) {
			r.failf("%s: want a whole number, not %s", k, v)
			return
		}
		*dst = int(f)
	}
}

func (r *reader) optInt(k string, dst **int) {
	if !r.has(k) || string(bytes.TrimSpace(r.members[k])) == "null" {
		r.used[k] = true
		return
	}
	var n int
	r.integer(k, &n, 0)
	*dst = &n
}

func (r *reader) boolean(k string, dst *bool, def *bool) {
	if def != nil {
		*dst = *def
	}
	if v, ok := r.get(k, def == nil, false); ok && json.Unmarshal(v, dst) != nil {
		r.failf("%s: want true or false, not %s", k, v)
	}
}

func (r *reader) enum(k string, dst *string, allowed []string, def string) {
	if def != "" {
		*dst = def
	}
	v, ok := r.get(k, def == "", false)
	if !ok {
		return
	}
	var s string
	if json.Unmarshal(v, &s) != nil || !slices.Contains(allowed, s) {
		r.failf("%s: %s; want one of %q", k, v, allowed)
		return
	}
	*dst = s
}

func (r *reader) time(k string, dst *pyTime, datetime bool) {
	v, ok := r.get(k, true, false)
	if !ok {
		return
	}
	r.parseTime(k, v, dst, datetime)
}

func (r *reader) optTime(k string, dst **pyTime, datetime bool) {
	v, ok := r.get(k, false, true)
	if !ok {
		return
	}
	var t pyTime
	if r.parseTime(k, v, &t, datetime) {
		*dst = &t
	}
}

func (r *reader) parseTime(k string, v json.RawMessage, dst *pyTime, datetime bool) bool {
	var s string
	if json.Unmarshal(v, &s) != nil {
		r.failf("%s: want a date string, not %s", k, v)
		return false
	}
	t, err := parseTime(s, datetime)
	if err != nil {
		r.failf("%s: %v", k, err)
		return false
	}
	*dst = t
	return true
}

func (r *reader) strs(k string) []string {
	out := []string{}
	if v, ok := r.get(k, false, false); ok && json.Unmarshal(v, &out) != nil {
		r.failf("%s: want a list of strings, not %s", k, v)
	}
	return out
}

func (r *reader) object(k string, fn func(*reader)) {
	if v, ok := r.get(k, true, false); ok {
		s := r.sub(r.path+"."+k, v)
		fn(s)
		s.checkExtra()
	}
}

// optObject reads a nested model that may be null (or absent: nil).
func (r *reader) optObject(k string, fn func(*reader)) bool {
	v, ok := r.get(k, false, true)
	if !ok {
		return false
	}
	s := r.sub(r.path+"."+k, v)
	fn(s)
	s.checkExtra()
	return true
}

// list reads a list of nested models (absent: empty unless required).
func (r *reader) list(k string, required bool, fn func(*reader)) {
	v, ok := r.get(k, required, false)
	if !ok {
		return
	}
	var items []json.RawMessage
	if json.Unmarshal(v, &items) != nil {
		r.failf("%s: want a list", k)
		return
	}
	for i, it := range items {
		s := r.sub(fmt.Sprintf("%s.%s[%d]", r.path, k, i), it)
		fn(s)
		s.checkExtra()
	}
}

// dictOf reads a dict of nested models in order (absent: def).
func (r *reader) dictOf(k string, def func(), fn func(key string, r *reader)) {
	v, ok := r.get(k, false, false)
	if !ok {
		def()
		return
	}
	if err := tau2.EachMember(v, func(key string, raw json.RawMessage) error {
		s := r.sub(fmt.Sprintf("%s.%s[%q]", r.path, k, key), raw)
		fn(key, s)
		s.checkExtra()
		return nil
	}); err != nil {
		r.failf("%s: want an object: %v", k, err)
	}
}

func (r *reader) checkExtra() {
	for _, k := range r.keys {
		if !r.used[k] {
			r.failf("%s: no such field", k)
		}
	}
}

func (r *reader) done() error {
	r.checkExtra()
	if len(*r.errs) == 0 {
		return nil
	}
	errs := *r.errs
	if len(errs) > 10 {
		errs = append(errs[:10], fmt.Sprintf("and %d more", len(*r.errs)-10))
	}
	return errors.New(strings.Join(errs, "; "))
}
