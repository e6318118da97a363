package multiturn

import (
	"crypto/rand"
	"crypto/sha512"
	"encoding/binary"
	"math"
	"math/big"
	"math/bits"
)

// Random is Python's random.Random: the Mersenne Twister MT19937 seeded
// from an integer as Python seeds it (init_by_array over the integer's
// 32-bit words), so that a class seeded with the scenario's random_seed
// draws the same numbers as its Python original.
type Random struct {
	mt  [624]uint32
	idx int
}

// NewRandom is random.Random(seed) for an integer seed.
func NewRandom(seed int64) *Random {
	u := uint64(seed)
	if seed < 0 {
		u = uint64(-seed) // Python seeds with abs(seed)
	}
	key := []uint32{uint32(u)}
	if hi := uint32(u >> 32); hi != 0 {
		key = append(key, hi)
	}
	r := &Random{}
	r.initByArray(key)
	return r
}

func (r *Random) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < 624; i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^(r.mt[i-1]>>30)) + uint32(i)
	}
	r.idx = 624
}

func (r *Random) initByArray(key []uint32) {
	r.initGenrand(19650218)
	i, j := 1, 0
	for k := max(624, len(key)); k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= 624 {
			r.mt[0] = r.mt[623]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k := 623; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= 624 {
			r.mt[0] = r.mt[623]
			i = 1
		}
	}
	r.mt[0] = 0x80000000
}

func (r *Random) uint32() uint32 {
	if r.idx >= 624 {
		for i := 0; i < 624; i++ {
			y := r.mt[i]&0x80000000 | r.mt[(i+1)%624]&0x7fffffff
			v := r.mt[(i+397)%624] ^ y>>1
			if y&1 != 0 {
				v ^= 0x9908b0df
			}
			r.mt[i] = v
		}
		r.idx = 0
	}
	y := r.mt[r.idx]
	r.idx++
	y ^= y >> 11
	y ^= y << 7 & 0x9d2c5680
	y ^= y << 15 & 0xefc60000
	y ^= y >> 18
	return y
}

// Float is random(): a float in [0, 1) from 53 random bits.
func (r *Random) Float() float64 {
	a, b := r.uint32()>>5, r.uint32()>>6
	return (float64(a)*67108864 + float64(b)) * (1.0 / 9007199254740992)
}

// bitsOf is getrandbits(k) for 0 < k <= 64: 32-bit words from the least
// significant, the last cut to what is left.
func (r *Random) bitsOf(k int) uint64 {
	if k <= 32 {
		return uint64(r.uint32() >> (32 - k))
	}
	lo := uint64(r.uint32())
	hi := uint64(r.uint32() >> (64 - k))
	return hi<<32 | lo
}

// Intn is randint(a, b): an integer in [a, b], drawn as Python draws it
// (getrandbits of b−a+1's bit length until the value is below it).
func (r *Random) Intn(a, b int64) int64 {
	n := uint64(b - a + 1)
	if n == 0 {
		return a
	}
	k := bits.Len64(n)
	v := r.bitsOf(k)
	for v >= n {
		v = r.bitsOf(k)
	}
	return a + int64(v)
}

// Uniform is uniform(a, b): a + (b−a)·random().
// The product is rounded before the sum (no fused multiply-add), as in
// Python.
func (r *Random) Uniform(a, b float64) float64 { return a + float64((b-a)*r.Float()) }

// seedRandom is random.Random(seed) for the seed types Python takes: an
// int (a bool is one), a float (seeded with its hash), a str (seeded with
// its UTF-8 bytes followed by their SHA-512), None (seeded from the OS);
// any other is Python's TypeError.
func seedRandom(seed any) (*Random, error) {
	switch t := seed.(type) {
	case int64:
		return NewRandom(t), nil
	case bool:
		if t {
			return NewRandom(1), nil
		}
		return NewRandom(0), nil
	case *big.Int:
		return seedBig(new(big.Int).Abs(t)), nil
	case float64:
		if !math.IsNaN(t) {
			// Python seeds with the hash as a size_t.
			return seedBig(new(big.Int).SetUint64(uint64(hashFloat(t)))), nil
		}
	case string:
		sum := sha512.Sum512([]byte(t))
		return seedBig(new(big.Int).SetBytes(append([]byte(t), sum[:]...))), nil
	case nil:
	default:
		return nil, Raise("The only supported seed types are: None,\nint, float, str, bytes, and bytearray.")
	}
	// None, and NaN (whose hash is its address): a seed from the OS.
	var b [8]byte
	_, _ = rand.Read(b[:])
	return seedBig(new(big.Int).SetUint64(binary.LittleEndian.Uint64(b[:]))), nil
}

// seedBig seeds a generator with a non-negative integer as Python
// does: init_by_array over its 32-bit words, the least significant first
// (one word for 0).
func seedBig(n *big.Int) *Random {
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

// hashFloat is Python's hash of a finite or infinite float: its value
// modulo the Mersenne prime 2**61 - 1, with the sign, -1 taken as -2.
func hashFloat(v float64) int64 {
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
