package cpu

import "math"

// expf is e^x in float32 to within 2 ulp, several times faster than
// math.Exp: x = n·ln2 + r with |r| ≤ ln2/2, e^r by a degree-6 polynomial
// (Cephes' expf coefficients), scaled by 2^n through the exponent bits.
// The softmaxes over the vocabulary and over attention scores, and silu,
// spend most of their time here.
func expf(x float32) float32 {
	switch {
	case x > 88.72283:
		return float32(math.Inf(1))
	case x < -87.33654:
		return 0
	case x != x:
		return x
	}
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
	)
	n := float32(math.Floor(float64(x*log2e + 0.5)))
	r := x - n*ln2hi - n*ln2lo
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	e := p*r*r + r + 1
	// 2^n for n in [-126, 128]: split to stay in the normal range.
	ni := int32(n)
	if ni < -125 {
		return e * math.Float32frombits(uint32(ni+126+127)<<23) * math.Float32frombits(uint32(-126+127)<<23)
	}
	if ni > 127 {
		return e * 2 * math.Float32frombits(uint32(ni-1+127)<<23)
	}
	return e * math.Float32frombits(uint32(ni+127)<<23)
}
