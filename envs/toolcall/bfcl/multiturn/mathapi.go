package multiturn

import (
	"math"
	"math/big"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// mathAPI is BFCL's MathAPI (math_api.py): stateless arithmetic,
// statistics and unit conversions, whose logarithm runs on mpmath and
// whose square_root on the decimal module. BFCL never loads it with a
// config and its only attribute is private, so its state is empty.
//
// Results are Python 3.11's to the digit: ints stay exact, floats are IEEE
// doubles operated on as CPython does (sum() adds left to right, as 3.11
// does; 3.12 compensates), and an mpmath, Decimal or complex result is
// str() of its dict, since json.dumps refuses it. Deliberate deviations:
//   - float ** float (power, and the squares standard_deviation sums) is
//     correctly rounded. CPython calls the C library's pow, which glibc
//     rounds correctly but at exact ties (x ** 2 for an x of 27
//     significant bits whose square has 54) and at some near-ties: on
//     random inputs about one call in 1,500 ends one unit off in the last
//     place. Complex ** (a negative base to a fractional power) likewise
//     uses correctly rounded pow, sin and cos.
//   - mpmath's log is taken as correctly rounded; mpmath's own is within
//     2^-18 of an ulp before it rounds, so they can differ only there.
//   - logarithm past about 30,000 digits of precision and square_root
//     past 1,000,000 raise the MemoryError ("") Python raises where memory
//     runs out, instead of computing for minutes to hours first.
//   - a string with a decimal exponent past 5*10^8, beyond big.Float's
//     range, is no number to logarithm (mpmath reads it).
//   - an int result that str() refuses (over 4,300 digits) is that
//     ValueError at once, where Python may first compute for hours.
type mathAPI struct{}

func init() { register("MathAPI", func() Class { return &mathAPI{} }) }

func (*mathAPI) Load(*pyval.Dict) error { return nil }

func (*mathAPI) State() *pyval.Dict { return pyval.NewDict() }

// mathResult is {"result": v}, rendered as the executor would: json.dumps
// of it, or str() of it for a value json.dumps refuses (given as its
// repr), or the ValueError of an int too long to print.
func mathResult(v any) (any, error) {
	if err := mathTooLong(v); err != nil {
		return nil, err
	}
	switch t := v.(type) {
	case mathComplex:
		return "{'result': " + t.String() + "}", nil
	case mathDecimal:
		return "{'result': Decimal('" + t.String() + "')}", nil
	}
	return dictOf("result", v), nil
}

// mathCatch turns the exceptions a method catches into its error dict and
// lets the others through.
func mathCatch(v any, err error, msg string, kinds ...string) (any, error) {
	if err == nil {
		return mathResult(v)
	}
	if isExc(err, kinds...) {
		return errDict(msg), nil
	}
	return nil, err
}

const (
	mathBothNumbers = "Both inputs must be numbers"
	mathAllNumbers  = "All elements in the list must be numbers"
)

func (m *mathAPI) Methods() []Method {
	binary := func(name, op string) Method {
		return Method{Name: name, Params: []Param{Req("a"), Req("b")}, Call: func(a []any) (any, error) {
			v, err := arith(op, a[0], a[1])
			return mathCatch(v, err, mathBothNumbers, "TypeError")
		}}
	}
	return []Method{
		{Name: "logarithm", Params: []Param{Req("value"), Req("base"), Req("precision")}, Call: func(a []any) (any, error) {
			return mathLogarithm(a[0], a[1], a[2])
		}},
		{Name: "mean", Params: []Param{Req("numbers")}, Call: func(a []any) (any, error) {
			if !Truthy(a[0]) {
				return errDict("Cannot calculate mean of an empty list"), nil
			}
			v, err := mathMean(a[0])
			return mathCatch(v, err, mathAllNumbers, "TypeError")
		}},
		{Name: "standard_deviation", Params: []Param{Req("numbers")}, Call: func(a []any) (any, error) {
			if !Truthy(a[0]) {
				return errDict("Cannot calculate standard deviation of an empty list"), nil
			}
			v, err := mathStdDev(a[0])
			return mathCatch(v, err, mathAllNumbers, "TypeError")
		}},
		{Name: "si_unit_conversion", Params: []Param{Req("value"), Req("unit_in"), Req("unit_out")}, Call: func(a []any) (any, error) {
			return mathSIConversion(a[0], a[1], a[2])
		}},
		{Name: "imperial_si_conversion", Params: []Param{Req("value"), Req("unit_in"), Req("unit_out")}, Call: func(a []any) (any, error) {
			return mathImperialConversion(a[0], a[1], a[2])
		}},
		binary("add", "+"),
		binary("subtract", "-"),
		{Name: "multiply", Params: []Param{Req("a"), Req("b")}, Call: func(a []any) (any, error) {
			if !isNum(a[0]) || !isNum(a[1]) {
				return errDict(mathBothNumbers), nil
			}
			v, err := arith("*", a[0], a[1])
			return mathCatch(v, err, mathBothNumbers, "TypeError")
		}},
		{Name: "divide", Params: []Param{Req("a"), Req("b")}, Call: func(a []any) (any, error) {
			if pyval.Eq(a[1], int64(0)) {
				return errDict("Cannot divide by zero"), nil
			}
			v, err := arith("/", a[0], a[1])
			return mathCatch(v, err, mathBothNumbers, "TypeError")
		}},
		{Name: "power", Params: []Param{Req("base"), Req("exponent")}, Call: func(a []any) (any, error) {
			v, err := mathPow(a[0], a[1])
			return mathCatch(v, err, mathBothNumbers, "TypeError")
		}},
		{Name: "square_root", Params: []Param{Req("number"), Req("precision")}, Call: func(a []any) (any, error) {
			v, err := mathSquareRoot(a[0], a[1])
			if d, ok := v.(*pyval.Dict); ok {
				return d, nil
			}
			return mathCatch(v, err, "Input must be a number or computation resulted in an invalid operation", "TypeError", "InvalidOperation")
		}},
		{Name: "absolute_value", Params: []Param{Req("number")}, Call: func(a []any) (any, error) {
			v, err := absOf(a[0])
			return mathCatch(v, err, "Input must be a number", "TypeError")
		}},
		{Name: "round_number", Params: []Param{Req("number"), Opt("decimal_places", int64(0))}, Call: func(a []any) (any, error) {
			v, err := mathRound(a[0], a[1])
			return mathCatch(v, err, "First input must be a number, second input must be an integer", "TypeError")
		}},
		{Name: "percentage", Params: []Param{Req("part"), Req("whole")}, Call: func(a []any) (any, error) {
			if pyval.Eq(a[1], int64(0)) {
				return errDict("Whole value cannot be zero"), nil
			}
			v, err := arith("/", a[0], a[1])
			if err == nil {
				v, err = arith("*", v, int64(100))
			}
			return mathCatch(v, err, mathBothNumbers, "TypeError")
		}},
		{Name: "min_value", Params: []Param{Req("numbers")}, Call: func(a []any) (any, error) {
			if !Truthy(a[0]) {
				return errDict("Cannot find minimum of an empty list"), nil
			}
			v, err := mathExtreme(a[0], "<")
			return mathCatch(v, err, mathAllNumbers, "TypeError")
		}},
		{Name: "max_value", Params: []Param{Req("numbers")}, Call: func(a []any) (any, error) {
			if !Truthy(a[0]) {
				return errDict("Cannot find maximum of an empty list"), nil
			}
			v, err := mathExtreme(a[0], ">")
			return mathCatch(v, err, mathAllNumbers, "TypeError")
		}},
		{Name: "sum_values", Params: []Param{Req("numbers")}, Call: func(a []any) (any, error) {
			if !Truthy(a[0]) {
				return errDict("Cannot calculate sum of an empty list"), nil
			}
			v, err := mathSum(a[0])
			return mathCatch(v, err, mathAllNumbers, "TypeError")
		}},
	}
}

// mathLogarithm sets mpmath's precision, takes log(value) / log(base),
// and reports any exception as its error dict.
func mathLogarithm(value, base, precision any) (any, error) {
	r, err := func() (string, error) {
		prec, err := mathMpDps(precision)
		if err != nil {
			return "", err
		}
		lv, err := mathMpConvert(value, prec)
		if err != nil {
			return "", err
		}
		lv = mathMpLn(lv, prec)
		lb, err := mathMpConvert(base, prec)
		if err != nil {
			return "", err
		}
		lb = mathMpLn(lb, prec)
		q, err := mathMpQuo(lv, lb, prec)
		if err != nil {
			return "", err
		}
		return "{'result': " + mathMpRepr(q, prec) + "}", nil
	}()
	if err != nil {
		return errDict(err.Error()), nil
	}
	return r, nil
}

// mathMean is sum(numbers) / len(numbers).
func mathMean(numbers any) (any, error) {
	s, err := mathSum(numbers)
	if err != nil {
		return nil, err
	}
	return arith("/", s, int64(len(numbers.([]any))))
}

// mathStdDev is the population standard deviation, as the Python sums
// it: the squares (float ** 2) of the deviations from the mean.
func mathStdDev(numbers any) (any, error) {
	mean, err := mathMean(numbers)
	if err != nil {
		return nil, err
	}
	list := numbers.([]any)
	var acc any = int64(0)
	for _, x := range list {
		d, err := arith("-", x, mean)
		if err != nil {
			return nil, err
		}
		sq, err := mathPow(d, int64(2))
		if err != nil {
			return nil, err
		}
		if acc, err = arith("+", acc, sq); err != nil {
			return nil, err
		}
	}
	variance, err := arith("/", acc, int64(len(list)))
	if err != nil {
		return nil, err
	}
	f := variance.(float64)
	if f < 0 {
		return nil, raiseKind("ValueError", "math domain error")
	}
	return math.Sqrt(f), nil
}

// mathSIFactors are si_unit_conversion's to_meters: ints for km and m.
var mathSIFactors = map[string]any{"km": int64(1000), "m": int64(1), "cm": 0.01, "mm": 0.001, "um": 1e-6, "nm": 1e-9}

func mathSIConversion(value, unitIn, unitOut any) (any, error) {
	if !isNum(value) {
		return errDict("Value must be a number"), nil
	}
	in, inOK, err := mathSIFactor(unitIn)
	if err != nil {
		return nil, err
	}
	var out any
	outOK := false
	if inOK {
		if out, outOK, err = mathSIFactor(unitOut); err != nil {
			return nil, err
		}
	}
	if !inOK || !outOK {
		return errDict("Conversion from '" + Str(unitIn) + "' to '" + Str(unitOut) + "' is not supported"), nil
	}
	// from_meters: 1 / factor, a float division
	inv, _ := arith("/", int64(1), out)
	meters, err := arith("*", value, in)
	if err == nil {
		var v any
		if v, err = arith("*", meters, inv); err == nil {
			return mathResult(v)
		}
	}
	if isExc(err, "OverflowError") {
		return errDict("Conversion resulted in a value too large to represent"), nil
	}
	return nil, err
}

// mathSIFactor looks a unit up as `unit in to_meters` does: an
// unhashable unit raises TypeError.
func mathSIFactor(unit any) (any, bool, error) {
	s, ok, err := strKey(unit)
	if !ok {
		return nil, false, err
	}
	f, ok := mathSIFactors[s]
	return f, ok, nil
}

// mathImperialFactors are imperial_si_conversion's factors.
var mathImperialFactors = map[string]float64{
	"cm_to_in": 0.393701, "in_to_cm": 2.54,
	"m_to_ft": 3.28084, "ft_to_m": 0.3048,
	"m_to_yd": 1.09361, "yd_to_m": 0.9144,
	"km_to_miles": 0.621371, "miles_to_km": 1.60934,
	"kg_to_lb": 2.20462, "lb_to_kg": 0.453592,
	"celsius_to_fahrenheit": 1.8,
}

func mathImperialConversion(value, unitIn, unitOut any) (any, error) {
	if !isNum(value) {
		return errDict("Value must be a number"), nil
	}
	if pyval.Eq(unitIn, unitOut) {
		return mathResult(value)
	}
	key := Str(unitIn) + "_to_" + Str(unitOut)
	var factor any
	if f, ok := mathImperialFactors[key]; ok {
		factor = f
	} else if key == "fahrenheit_to_celsius" {
		factor, _ = arith("/", int64(5), int64(9))
	} else {
		return errDict("Conversion from '" + Str(unitIn) + "' to '" + Str(unitOut) + "' is not supported"), nil
	}
	var v any
	var err error
	switch {
	case unitIn == "celsius" && unitOut == "fahrenheit":
		if v, err = arith("*", value, factor); err == nil {
			v, err = arith("+", v, int64(32))
		}
	case unitIn == "fahrenheit" && unitOut == "celsius":
		if v, err = arith("-", value, int64(32)); err == nil {
			v, err = arith("*", v, factor)
		}
	default:
		v, err = arith("*", value, factor)
	}
	if err == nil {
		return mathResult(v)
	}
	if isExc(err, "OverflowError") {
		return errDict("Conversion resulted in a value too large to represent"), nil
	}
	return nil, err
}

// mathDecimalMaxPrec bounds square_root's precision (digits).
const mathDecimalMaxPrec = 1000000

// mathSquareRoot is square_root's body: number < 0, the context's
// precision set, Decimal(number).sqrt().
func mathSquareRoot(number, precision any) (any, error) {
	neg, err := Compare("<", number, int64(0))
	if err != nil {
		return nil, err
	}
	if neg {
		return errDict("Cannot calculate square root of a negative number"), nil
	}
	if !isInt(precision) {
		return nil, raiseKind("TypeError", "an integer is required")
	}
	p := pyval.BigOf(precision)
	switch {
	case !p.IsInt64():
		return nil, raiseKind("OverflowError", "Python int too large to convert to C ssize_t")
	case p.Sign() <= 0 || p.Cmp(big.NewInt(999999999999999999)) > 0:
		return nil, raiseKind("ValueError", "valid range for prec is [1, MAX_PREC]")
	case p.Int64() > mathDecimalMaxPrec:
		return nil, mathErrMemory
	}
	return mathDecimalSqrt(mathDecimalOf(number), p.Int64()), nil
}

// mathExtreme is min() (op "<") or max() (op ">") of an iterable: the
// first item no later item is op than.
func mathExtreme(numbers any, op string) (any, error) {
	items, err := iterate(numbers)
	if err != nil {
		return nil, err
	}
	best := items[0]
	for _, x := range items[1:] {
		better, err := Compare(op, x, best)
		if err != nil {
			return nil, err
		}
		if better {
			best = x
		}
	}
	return best, nil
}
