// Package pyval is Python's values as the ports of Python benchmarks need
// them (tau2's domains, BFCL's checker and its multi-turn classes): an
// agent of a port must read the same bytes it would read from the Python
// original, and a checker must compare as Python compares.
//
// Values are JSON values with Python's types: nil (None), bool, int64 or
// *big.Int (int), float64 (float), string (str), []any (list) and *Dict
// (dict, keys in insertion order). Decode reads JSON as json.loads does
// (an integer literal decodes to an int, a literal with a fraction or an
// exponent to a float, so 5 and 5.0 stay apart); Dumps and AppendJSON
// write json.dumps's bytes (", " and ": ", ensure_ascii, floats as their
// repr); Repr and Str are Python's repr and str; Eq is ==; Copy is
// copy.deepcopy. FloatRepr, Quote and Lower are repr of a float, repr of
// a str and str.lower, which differ from Go's formatting and
// strings.ToLower.
package pyval
