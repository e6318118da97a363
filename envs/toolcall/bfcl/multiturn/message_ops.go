package multiturn

import (
	"crypto/rand"
	"crypto/sha512"
	"encoding/binary"
	"math"
	"math/big"
	"slices"
	"strconv"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// The Python values MessageAPI needs beyond pyval's: dicts whose keys
// need not be str, a set of ids, and the operations on them with the
// errors Python raises.

// msgDict is a Python dict whose keys are any hashable values a call can
// bring (str, int, float, bool, None), in insertion order: user_map, whose
// keys add_contact takes from its argument, and the inbox's messages.
type msgDict struct {
	keys, vals []any
}

// msgDictOf is a config's dict as a msgDict (its keys are strs).
func msgDictOf(d *pyval.Dict) *msgDict {
	out := &msgDict{vals: slices.Clone(d.Vals)}
	for _, k := range d.Keys {
		out.keys = append(out.keys, k)
	}
	return out
}

// msgPair is the one-entry dict {k: v}.
func msgPair(k, v any) *msgDict { return &msgDict{keys: []any{k}, vals: []any{v}} }

// msgHashable is what hash(k) raises for a key a dict cannot take.
func msgHashable(k any) error {
	switch k.(type) {
	case []any, *pyval.Dict:
		return Raise("unhashable type: %s", pyval.Quote(TypeName(k)))
	}
	return nil
}

// index is where key k is (-1 when absent), found as Python finds it: a
// key == k (1, 1.0 and True are one key); an unhashable k raises.
func (d *msgDict) index(k any) (int, error) {
	if err := msgHashable(k); err != nil {
		return -1, err
	}
	for i, x := range d.keys {
		if pyval.Eq(x, k) {
			return i, nil
		}
	}
	return -1, nil
}

// equal is Python's == on two dicts: the same keys, equal values.
func (d *msgDict) equal(o *msgDict) bool {
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

// state is the dict as a pyval.Dict, for State: a key that is not a str
// is tagged (msgTag), so that pyval.Eq on two of them is Python's ==.
func (d *msgDict) state() *pyval.Dict {
	out := pyval.NewDict()
	for i, k := range d.keys {
		out.Set(msgTag(k), d.vals[i])
	}
	return out
}

// msgTag is a key as a str that equal keys share and other keys do not.
func msgTag(k any) string {
	switch t := k.(type) {
	case string:
		return t
	case nil:
		return "\x00None"
	case float64:
		if t != math.Trunc(t) || math.IsInf(t, 0) {
			return "\x00float:" + pyval.FloatRepr(t)
		}
		b, _ := new(big.Float).SetFloat64(t).Int(nil)
		return "\x00int:" + b.String()
	}
	return "\x00int:" + pyval.BigOf(k).String()
}

// appendJSON writes the dict as json.dumps does, which writes a key that
// is not a str as a str: 5 as "5", 2.5 as "2.5", True as "true", None as
// "null".
func (d *msgDict) appendJSON(b []byte) []byte {
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

// msgObj is a dict of str keys and values, given in pairs.
func msgObj(kv ...any) *pyval.Dict {
	d := pyval.NewDict()
	for i := 0; i+1 < len(kv); i += 2 {
		d.Set(kv[i].(string), kv[i+1])
	}
	return d
}

// msgFirst is list(message.items())[0]: an inbox message's receiver and
// text, or the error Python raises for what is no such message.
func msgFirst(e any) (receiver, text any, err error) {
	d, ok := e.(*msgDict)
	if !ok {
		return nil, nil, Raise("%s object has no attribute 'items'", pyval.Quote(TypeName(e)))
	}
	if len(d.keys) == 0 {
		return nil, nil, Raise("list index out of range")
	}
	return d.keys[0], d.vals[0], nil
}

// msgContains is x in values, values compared by ==.
func msgContains(values []any, x any) bool {
	for _, v := range values {
		if pyval.Eq(v, x) {
			return true
		}
	}
	return false
}

// msgIDs is generated_ids as Python's set of ints.
type msgIDs map[int64]struct{}

// msgHasID is id in generated_ids, for the set or whatever a config gave.
func msgHasID(ids any, id int64) (bool, error) {
	switch t := ids.(type) {
	case msgIDs:
		_, ok := t[id]
		return ok, nil
	case []any:
		return msgContains(t, id), nil
	case *pyval.Dict:
		return false, nil // its keys are strs, never an int
	case string:
		return false, Raise("'in <string>' requires string as left operand, not int")
	}
	return false, Raise("argument of type %s is not iterable", pyval.Quote(TypeName(ids)))
}

// msgLower is v.lower() for a str; an AttributeError for anything else.
func msgLower(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", Raise("%s object has no attribute 'lower'", pyval.Quote(TypeName(v)))
	}
	return pyval.Lower(s), nil
}

// msgIncr is v += 1, with the TypeErrors Python raises for a v that is no
// number.
func msgIncr(v any) (any, error) {
	switch t := v.(type) {
	case bool:
		if t {
			return int64(2), nil
		}
		return int64(1), nil
	case int64:
		if t < math.MaxInt64 {
			return t + 1, nil
		}
		return new(big.Int).Add(big.NewInt(t), big.NewInt(1)), nil
	case *big.Int:
		n := new(big.Int).Add(t, big.NewInt(1))
		if n.IsInt64() {
			return n.Int64(), nil
		}
		return n, nil
	case float64:
		return t + 1, nil
	case string:
		return nil, Raise(`can only concatenate str (not "int") to str`)
	case []any:
		return nil, Raise("'int' object is not iterable")
	}
	return nil, Raise("unsupported operand type(s) for +=: %s and 'int'", pyval.Quote(TypeName(v)))
}

// msgZfill is s.zfill(width): zeros after any sign up to width.
func msgZfill(s string, width int) string {
	n := len([]rune(s))
	if n >= width {
		return s
	}
	pad := make([]byte, width-n)
	for i := range pad {
		pad[i] = '0'
	}
	if s != "" && (s[0] == '+' || s[0] == '-') {
		return s[:1] + string(pad) + s[1:]
	}
	return string(pad) + s
}

// msgRandom is random.Random(seed) for the seed types Python takes: an int
// (a bool is one), a float (seeded with its hash), a str (seeded with its
// UTF-8 bytes followed by their SHA-512), None (seeded from the OS).
func msgRandom(seed any) (*Random, error) {
	switch t := seed.(type) {
	case int64:
		return NewRandom(t), nil
	case bool:
		if t {
			return NewRandom(1), nil
		}
		return NewRandom(0), nil
	case *big.Int:
		return msgSeedBig(new(big.Int).Abs(t)), nil
	case float64:
		if !math.IsNaN(t) {
			// Python seeds with the hash as a size_t.
			return msgSeedBig(new(big.Int).SetUint64(uint64(msgHashFloat(t)))), nil
		}
	case string:
		sum := sha512.Sum512([]byte(t))
		return msgSeedBig(new(big.Int).SetBytes(append([]byte(t), sum[:]...))), nil
	case nil:
	default:
		return nil, Raise("The only supported seed types are: None,\nint, float, str, bytes, and bytearray.")
	}
	// None, and NaN (whose hash is its address): a seed from the OS.
	var b [8]byte
	_, _ = rand.Read(b[:])
	return msgSeedBig(new(big.Int).SetUint64(binary.LittleEndian.Uint64(b[:]))), nil
}

// msgSeedBig seeds a generator with a non-negative integer as Python
// does: init_by_array over its 32-bit words, the least significant first
// (one word for 0).
func msgSeedBig(n *big.Int) *Random {
	be := n.Bytes()
	key := make([]uint32, max(1, (len(be)+3)/4))
	for i, c := range be {
		pos := len(be) - 1 - i // byte position from the least significant
		key[pos/4] |= uint32(c) << (8 * (pos % 4))
	}
	r := &Random{}
	r.initByArray(key)
	return r
}

// msgHashFloat is Python's hash of a finite or infinite float: its value
// modulo the Mersenne prime 2**61 - 1, with the sign, -1 taken as -2.
func msgHashFloat(v float64) int64 {
	const bitsN = 61
	const mod = uint64(1)<<bitsN - 1
	if math.IsInf(v, 0) {
		if v > 0 {
			return 314159
		}
		return -314159
	}
	m, e := math.Frexp(v)
	sign := uint64(1)
	if m < 0 {
		sign, m = ^uint64(0), -m
	}
	var x uint64
	for m != 0 {
		x = (x<<28)&mod | x>>(bitsN-28)
		m *= 1 << 28
		e -= 28
		y := uint64(m)
		m -= float64(y)
		x += y
		if x >= mod {
			x -= mod
		}
	}
	if e >= 0 {
		e %= bitsN
	} else {
		e = bitsN - 1 - (-1-e)%bitsN
	}
	x = (x<<uint(e))&mod | x>>uint(bitsN-e)
	h := int64(x * sign)
	if h == -1 {
		h = -2
	}
	return h
}
