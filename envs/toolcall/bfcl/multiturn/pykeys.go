package multiturn

import (
	"math"
	"math/big"
	"slices"
	"strconv"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// Python's dict keys: any hashable value (None, bool, int, float, str),
// where keys that are == are one key (1, 1.0 and True; "1" is another),
// and a list or dict is unhashable.

// hashable is hash(k)'s TypeError for an unhashable k (a list or dict).
func hashable(k any) error {
	switch k.(type) {
	case []any, *pyval.Dict:
		return raiseKind("TypeError", "unhashable type: %s", pyval.Quote(TypeName(k)))
	}
	return nil
}

// numKey is a number written alike for numbers Python finds equal (as
// dict keys): an int, or a whole finite float, as its integer value
// (integral true); any other float as its repr.
func numKey(k any) (text string, integral bool) {
	f, ok := k.(float64)
	switch {
	case !ok:
		return pyval.BigOf(k).String(), true
	case math.IsInf(f, 0) || f != math.Trunc(f): // NaN too
		return pyval.FloatRepr(f), false
	}
	i, _ := new(big.Float).SetFloat64(f).Int(nil)
	return i.String(), true
}

// hashKey is a hashable key as a str, for a pyval.Dict keyed by any
// hashable value: a str is itself; None and numbers are "\xff" (a byte
// no UTF-8 str holds) and "None" or numKey, so that keys Python finds
// equal are one str and others not. An unhashable key raises.
func hashKey(k any) (string, error) {
	switch t := k.(type) {
	case string:
		return t, nil
	case nil:
		return "\xffNone", nil
	}
	if err := hashable(k); err != nil {
		return "", err
	}
	text, _ := numKey(k)
	return "\xff" + text, nil
}

// strKey is k as a key of a dict whose keys are all strs: ok is false for
// a hashable k of another type (never such a key), and an unhashable k
// raises.
func strKey(k any) (key string, ok bool, err error) {
	if err := hashable(k); err != nil {
		return "", false, err
	}
	key, ok = k.(string)
	return key, ok, nil
}

// dictHas is `k in d` for a dict of str keys.
func dictHas(d *pyval.Dict, k any) (bool, error) {
	s, ok, err := strKey(k)
	return ok && d.Has(s), err
}

// dictGet is d[k] for a dict of str keys: KeyError when k is not a key.
func dictGet(d *pyval.Dict, k any) (any, error) {
	s, ok, err := strKey(k)
	if err != nil {
		return nil, err
	}
	if v, found := d.Get(s); ok && found {
		return v, nil
	}
	return nil, KeyError(k)
}

// keyDict is a dict whose keys are any hashable values, the keys as given
// (the first of equal keys), in insertion order.
type keyDict struct {
	keys, vals []any
}

// keyDictOf is a dict of str keys (a config's) as a keyDict.
func keyDictOf(d *pyval.Dict) *keyDict {
	out := &keyDict{vals: slices.Clone(d.Vals)}
	for _, k := range d.Keys {
		out.keys = append(out.keys, k)
	}
	return out
}

// index is where key k is (-1 when absent), found as Python finds it (a
// key == k); an unhashable k raises.
func (d *keyDict) index(k any) (int, error) {
	if err := hashable(k); err != nil {
		return -1, err
	}
	return indexOf(d.keys, k), nil
}

// set is d[k] = v: a present key keeps its place (and its first form).
func (d *keyDict) set(k, v any) error {
	i, err := d.index(k)
	switch {
	case err != nil:
		return err
	case i >= 0:
		d.vals[i] = v
	default:
		d.keys = append(d.keys, k)
		d.vals = append(d.vals, v)
	}
	return nil
}

// keyList is list(d.keys()).
func (d *keyDict) keyList() []any { return slices.Clone(d.keys) }

// equal is d == o: the same keys, with equal values.
func (d *keyDict) equal(o *keyDict) bool {
	if len(d.keys) != len(o.keys) {
		return false
	}
	for i, k := range d.keys {
		j, _ := o.index(k)
		if j < 0 || !pyval.Eq(d.vals[i], o.vals[j]) {
			return false
		}
	}
	return true
}

// toDict is the dict as a pyval.Dict, for State: each key written as
// keyText writes it, which must write keys alike exactly when they are
// equal, so that pyval.Eq on two of them is Python's ==.
func (d *keyDict) toDict(keyText func(any) string) *pyval.Dict {
	out := pyval.NewDict()
	for i, k := range d.keys {
		out.Set(keyText(k), d.vals[i])
	}
	return out
}

// appendJSON writes the dict as json.dumps does, which writes a key that
// is not a str as a str: 5 as "5", 2.5 as "2.5", True as "true", None as
// "null".
func (d *keyDict) appendJSON(b []byte) []byte {
	b = append(b, '{')
	for i, k := range d.keys {
		if i > 0 {
			b = append(b, ", "...)
		}
		var key string
		switch t := k.(type) {
		case string:
			key = t
		case nil:
			key = "null"
		case bool:
			key = strconv.FormatBool(t)
		case float64:
			key = string(pyval.AppendFloat(nil, t))
		default:
			key = pyval.BigOf(k).String()
		}
		b = pyval.AppendString(b, key)
		b = append(b, ": "...)
		b = pyval.AppendJSON(b, d.vals[i])
	}
	return append(b, '}')
}
