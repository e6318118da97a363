package bfcl

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// Call is one function call as a model emitted it: the name it called (an
// offered OpenAI-safe name or BFCL's own) and its arguments as JSON text.
type Call struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	// Malformed, when set, says why an answer-file entry is not a call; it
	// is scored as output in the wrong format.
	Malformed string `json:"malformed,omitempty"`
}

// Answer is a model's whole answer to a case.
type Answer struct {
	Calls []Call
	// Text is true when the model answered with a message instead of a
	// list of calls (BFCL's decoder fails on it).
	Text bool
}

// Result is the checker's verdict. Reason is one of the Reason constants;
// ErrorType is BFCL's own error_type for the same failure; Detail says what
// was wrong.
type Result struct {
	Valid     bool   `json:"valid"`
	Reason    string `json:"reason,omitempty"`
	ErrorType string `json:"error_type,omitempty"`
	Detail    string `json:"detail,omitempty"`
}

// Reasons an answer fails, each mirroring one of BFCL's error types.
const (
	ReasonDecoderFailed    = "decoder_failed"              // ast_decoder:decoder_failed: no calls, or arguments that are not JSON
	ReasonWrongFormat      = "wrong_output_format"         // ast_decoder:decoder_wrong_output_format: arguments not an object
	ReasonWrongCount       = "wrong_count"                 // *:wrong_count: not as many calls as expected
	ReasonWrongFuncName    = "wrong_func_name"             // simple_function_checker:wrong_func_name
	ReasonMissingRequired  = "missing_required"            // simple_function_checker:missing_required
	ReasonUnexpectedParam  = "unexpected_param"            // simple_function_checker:unexpected_param
	ReasonMissingOptional  = "missing_optional"            // simple_function_checker:missing_optional: a parameter the answer needs is absent
	ReasonTypeError        = "type_error"                  // type_error:simple
	ReasonNestedTypeError  = "type_error_nested"           // type_error:nested: a list element of the wrong type
	ReasonJavaTypeError    = "type_error_java"             // type_error:java: a Java argument that is not a string
	ReasonJSTypeError      = "type_error_js"               // type_error:js: a JavaScript argument that is not a string
	ReasonStringMismatch   = "value_error_string"          // value_error:string
	ReasonListMismatch     = "value_error_list"            // value_error:list/tuple
	ReasonDictKey          = "value_error_dict_key"        // value_error:dict_key: a key missing or not expected
	ReasonDictValue        = "value_error_dict_value"      // value_error:dict_value
	ReasonListDictCount    = "value_error_list_dict_count" // value_error:list_dict_count
	ReasonValueMismatch    = "value_mismatch"              // value_error:others: a number, boolean or other value
	ReasonDictUnclear      = "dict_unclear"                // dict_checker:unclear: no acceptable dict to compare with
	ReasonListDictUnclear  = "list_dict_unclear"           // list_dict_checker:unclear
	ReasonNoMatch          = "cannot_find_match"           // parallel_function_checker_no_order:cannot_find_match
	ReasonIrrelevanceCall  = "irrelevance_call"            // irrelevance_error:decoder_success: a call where none fits
	ReasonRelevanceNoCall  = "relevance_no_call"           // relevance_error:decoder_failed: no call where one fits
	ReasonCheckerException = "checker_exception"           // BFCL's checker raises on this input (an undeclared type, a malformed answer)
	ReasonNoAnswer         = "no_answer"                   // the episode ended with no answer, or the answers file has none
)

var reasonOf = map[string]string{
	"ast_decoder:decoder_failed":                           ReasonDecoderFailed,
	"ast_decoder:decoder_wrong_output_format":              ReasonWrongFormat,
	"simple_function_checker:wrong_count":                  ReasonWrongCount,
	"multiple_function_checker:wrong_count":                ReasonWrongCount,
	"parallel_function_checker_no_order:wrong_count":       ReasonWrongCount,
	"simple_function_checker:wrong_func_name":              ReasonWrongFuncName,
	"simple_function_checker:missing_required":             ReasonMissingRequired,
	"simple_function_checker:unexpected_param":             ReasonUnexpectedParam,
	"simple_function_checker:missing_optional":             ReasonMissingOptional,
	"type_error:simple":                                    ReasonTypeError,
	"type_error:nested":                                    ReasonNestedTypeError,
	"type_error:java":                                      ReasonJavaTypeError,
	"type_error:js":                                        ReasonJSTypeError,
	"value_error:string":                                   ReasonStringMismatch,
	"value_error:list/tuple":                               ReasonListMismatch,
	"value_error:dict_key":                                 ReasonDictKey,
	"value_error:dict_value":                               ReasonDictValue,
	"value_error:list_dict_count":                          ReasonListDictCount,
	"value_error:others":                                   ReasonValueMismatch,
	"dict_checker:unclear":                                 ReasonDictUnclear,
	"list_dict_checker:unclear":                            ReasonListDictUnclear,
	"parallel_function_checker_no_order:cannot_find_match": ReasonNoMatch,
	"irrelevance_error:decoder_success":                    ReasonIrrelevanceCall,
	"relevance_error:decoder_failed":                       ReasonRelevanceNoCall,
	"checker_exception":                                    ReasonCheckerException,
	"no_answer":                                            ReasonNoAnswer,
}

// verdict is one check's outcome: errType is BFCL's error_type ("" when
// valid).
type verdict struct {
	errType    string
	msg        string
	isVariable bool // type checks: the value stands for a variable name
}

var valid = verdict{}

func (v verdict) ok() bool { return v.errType == "" }

func fail(errType, format string, args ...any) verdict {
	return verdict{errType: errType, msg: fmt.Sprintf(format, args...)}
}

func (v verdict) result() Result {
	if v.ok() {
		return Result{Valid: true}
	}
	return Result{Reason: reasonOf[v.errType], ErrorType: v.errType, Detail: v.msg}
}

// decoded is a call whose arguments decoded to an object.
type decoded struct {
	name string // BFCL's name
	args *Dict
}

// Check scores an answer by BFCL's AST rules for the case's category:
// irrelevance passes with no call; relevance with any call; parallel
// categories need as many calls as expected, matched in any order;
// multiple ones exactly one call of the expected function; the rest
// exactly one call. Each call is checked as BFCL's simple function checker
// does (name, required parameters, unexpected parameters, types, values,
// parameters the answer needs).
func (c *Case) Check(a Answer) (res Result) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(pyException)
			if !ok {
				panic(r)
			}
			res = Result{Reason: ReasonCheckerException, ErrorType: "checker_exception",
				Detail: "BFCL's checker raises on this answer: " + e.msg}
		}
	}()
	calls, dv := c.decode(a)
	switch {
	case strings.Contains(c.Category, "irrelevance"):
		if dv.ok() && len(calls) > 0 {
			return fail("irrelevance_error:decoder_success", "the answer calls %s, but no function fits the question", calls[0].name).result()
		}
		return Result{Valid: true}
	case strings.Contains(c.Category, "relevance"):
		if !dv.ok() || len(calls) == 0 {
			return fail("relevance_error:decoder_failed", "the answer makes no function call, but one fits the question").result()
		}
		return Result{Valid: true}
	}
	if !dv.ok() {
		return dv.result()
	}
	k := checker{c: c, lang: c.Language()}
	switch {
	case strings.Contains(c.Category, "parallel"):
		return k.parallel(calls).result()
	case strings.Contains(c.Category, "multiple"):
		if len(calls) != len(c.GroundTruth) {
			return fail("multiple_function_checker:wrong_count", "%d calls; want %d", len(calls), len(c.GroundTruth)).result()
		}
		gt := c.GroundTruth[0].(*Dict)
		return k.simple(k.doc(gt.Keys[0]), calls[0], gt).result()
	}
	if len(calls) != 1 {
		return fail("simple_function_checker:wrong_count", "%d calls; want 1", len(calls)).result()
	}
	if len(c.GroundTruth) == 0 {
		raise("IndexError: list index out of range (no ground truth)")
	}
	return k.simple(c.Functions[0], calls[0], c.GroundTruth[0].(*Dict)).result()
}

// decode turns the answer's calls into names and argument objects, as
// BFCL's decoder for function-calling models: a message, or arguments that
// are not JSON, fail decoding; arguments that are not an object, or an
// entry that is not a call, are output in the wrong format. Empty
// arguments are an empty object.
func (c *Case) decode(a Answer) ([]decoded, verdict) {
	if a.Text {
		return nil, fail("ast_decoder:decoder_failed", "the answer is a message, not function calls")
	}
	out := make([]decoded, 0, len(a.Calls))
	var format verdict
	for i, call := range a.Calls {
		if call.Malformed != "" {
			if format.ok() {
				format = fail("ast_decoder:decoder_wrong_output_format", "entry %d: %s", i+1, call.Malformed)
			}
			continue
		}
		args := strings.TrimSpace(call.Arguments)
		if args == "" {
			args = "{}"
		}
		v, err := pyval.Decode([]byte(args))
		if err != nil {
			return nil, fail("ast_decoder:decoder_failed", "the arguments of %s are not JSON: %v", call.Name, err)
		}
		d, ok := v.(*Dict)
		if !ok {
			if format.ok() {
				format = fail("ast_decoder:decoder_wrong_output_format", "the arguments of %s are %s, not an object", call.Name, kindOf(v))
			}
			continue
		}
		out = append(out, decoded{name: c.resolve(call.Name), args: d})
	}
	if !format.ok() {
		return nil, format
	}
	return out, valid
}

type checker struct {
	c    *Case
	lang string
}

// doc finds a function's doc by its BFCL name; BFCL's checker fails on a
// ground truth naming a function the case lacks.
func (k checker) doc(name string) *Dict {
	fd := k.c.function(name)
	if fd == nil {
		raise("TypeError: the ground truth names %s, which is not among the case's functions", name)
	}
	return fd
}

// parallel matches every expected call, in order, with the first unmatched
// call of the answer that passes the simple check against it.
func (k checker) parallel(calls []decoded) verdict {
	if len(calls) != len(k.c.GroundTruth) {
		return fail("parallel_function_checker_no_order:wrong_count", "%d calls; want %d", len(calls), len(k.c.GroundTruth))
	}
	matched := make([]bool, len(calls))
	for i, g := range k.c.GroundTruth {
		gt := g.(*Dict)
		fd := k.doc(gt.Keys[0])
		var last verdict
		var why []string
		for j, call := range calls {
			if matched[j] {
				continue
			}
			last = k.simple(fd, call, gt)
			if last.ok() {
				matched[j] = true
				break
			}
			why = append(why, fmt.Sprintf("call %d: %s (%s)", j+1, reasonOf[last.errType], last.msg))
		}
		if !last.ok() {
			return fail("parallel_function_checker_no_order:cannot_find_match",
				"no call matches expected call %d (%s): %s", i+1, gt.Keys[0], strings.Join(why, "; "))
		}
	}
	return valid
}

var nestedTypes = map[string]bool{"Array": true, "ArrayList": true, "array": true}

// simple checks one call against one expected call {name: {param: [values]}}.
func (k checker) simple(fd *Dict, call decoded, gt *Dict) verdict {
	possible := gt.Value(gt.Keys[0]).(*Dict)
	name := fd.Value("name").(string)
	if call.name != name {
		return fail("simple_function_checker:wrong_func_name", "called %s; want %s", call.name, name)
	}
	params, _ := fd.Value("parameters").(*Dict)
	details := NewDict()
	var required any = []any{}
	if params != nil {
		if p, ok := params.Value("properties").(*Dict); ok {
			details = p
		}
		if r, ok := params.Get("required"); ok {
			required = r
		}
	}
	for _, r := range pyIter(required) {
		if !pyContains(call.args, r) {
			return fail("simple_function_checker:missing_required", "missing required parameter %s", pyval.Repr(r))
		}
	}
	for _, param := range call.args.Keys {
		value := call.args.Value(param)
		if _, ok := details.Get(param); !ok {
			return fail("simple_function_checker:unexpected_param", "unexpected parameter %s", pyval.Repr(param))
		}
		if _, ok := possible.Get(param); !ok {
			return fail("simple_function_checker:unexpected_param", "unexpected parameter %s", pyval.Repr(param))
		}
		full := details.Value(param)
		typ, ok := pyIndex(full, "type").(string)
		if !ok {
			raise("TypeError: the type of parameter %s is not a name", pyval.Repr(param))
		}
		conv, nested := kAbsent, kAbsent
		switch k.lang {
		case "java", "javascript":
			table, convert, label := javaTypes, javaConvert, "java"
			if k.lang == "javascript" {
				table, convert, label = jsTypes, jsConvert, "js"
			}
			if conv, ok = table[typ]; !ok {
				raise("KeyError: %s", pyval.Repr(typ))
			}
			s, isStr := value.(string)
			if !isStr {
				return fail("type_error:"+label, "parameter %s must be a string of %s source text; got %s %s",
					pyval.Repr(param), map[string]string{"java": "Java", "js": "JavaScript"}[label], kindOf(value), pyval.Repr(value))
			}
			if nestedTypes[typ] {
				nt, _ := pyIndex(pyIndex(full, "items"), "type").(string)
				if nested, ok = table[nt]; !ok {
					raise("KeyError: %s", pyval.Repr(nt))
				}
				value = convert(s, typ, nt)
			} else {
				value = convert(s, typ, "")
			}
		default:
			if conv, ok = pyTypes[typ]; !ok {
				raise("KeyError: %s", pyval.Repr(typ))
			}
			if typ == "array" || typ == "tuple" {
				nt, _ := pyIndex(pyIndex(full, "items"), "type").(string)
				if nested, ok = pyTypes[nt]; !ok {
					raise("KeyError: %s", pyval.Repr(nt))
				}
			}
			// Python accepts an int where a float is expected.
			if typ == "float" {
				switch n := value.(type) {
				case int64:
					value = float64(n)
				case *big.Int:
					value, _ = new(big.Float).SetInt(n).Float64()
				}
			}
		}
		want := possible.Value(param)
		tc := typeCheck(param, value, want, typ, conv, nested)
		if !tc.ok() {
			return tc
		}
		if !tc.isVariable {
			var r verdict
			switch {
			case conv == kDict:
				r = dictCheck(value, want)
			case conv == kList && nested == kDict:
				r = listDictCheck(value.([]any), want)
			case conv == kStr:
				r = stringCheck(param, value.(string), want)
			case conv == kList:
				r = listCheck(param, value.([]any), want)
			default:
				if !pyContains(want, value) {
					return fail("value_error:others", "parameter %s is %s; want one of %s", pyval.Repr(param), pyval.Repr(value), pyval.Repr(want))
				}
				continue
			}
			if !r.ok() {
				return r
			}
			continue
		}
		if !pyContains(want, value) {
			return fail("value_error:others", "parameter %s is %s; want one of %s", pyval.Repr(param), pyval.Repr(value), pyval.Repr(want))
		}
	}
	for _, param := range possible.Keys {
		if _, given := call.args.Get(param); !given && !pyContains(possible.Value(param), "") {
			return fail("simple_function_checker:missing_optional", "parameter %s is missing; the answer needs one of %s", pyval.Repr(param), pyval.Repr(possible.Value(param)))
		}
	}
	return valid
}

// possibleType is the type of the first acceptable value that is not ""
// (the mark of an omittable parameter); kAbsent when there is none.
func possibleType(possible any) pyKind {
	for _, a := range pyIter(possible) {
		if s, ok := a.(string); ok && s == "" {
			continue
		}
		return kindOf(a)
	}
	return kAbsent
}

// typeCheck is BFCL's type checker. A value of the declared type passes
// (for lists, each element is checked against the element type, one level
// deep); a value of another type passes as a variable when the acceptable
// values themselves are of its type (a variable name where a dict was
// declared), and is then compared as is, without normalisation.
func typeCheck(param string, value, possible any, typ string, want, nested pyKind) verdict {
	pt := possibleType(possible)
	isVariable := pt != kAbsent && pt != want
	res := verdict{}
	if kindOf(value) == want {
		if nested == kAbsent {
			return verdict{isVariable: isVariable}
		}
		for _, item := range pyIter(possible) {
			pass := true
			if _, isList := item.([]any); isList {
				for _, e := range value.([]any) {
					if !typeCheck(param, e, item, nested.String(), nested, kAbsent).ok() {
						pass = false
						break
					}
				}
			}
			if pass {
				return verdict{isVariable: isVariable}
			}
		}
		res = fail("type_error:nested", "parameter %s: an element is not of type %s (a %s of %s); got %s", pyval.Repr(param), nested, typ, nested, pyval.Repr(value))
	}
	if pt != kAbsent && kindOf(value) == pt {
		res.isVariable = true
		return res
	}
	return fail("type_error:simple", "parameter %s must be of type %s; got %s %s", pyval.Repr(param), typ, kindOf(value), pyval.Repr(value))
}

// stringCheck compares normalised strings.
func stringCheck(param, value string, possible any) verdict {
	std := standardize(value)
	for _, a := range pyIter(possible) {
		if s, ok := a.(string); ok && standardize(s) == std {
			return valid
		}
	}
	return fail("value_error:string", "parameter %s is %s; want one of %s (case, spaces and ,./-_*^ ignored)", pyval.Repr(param), pyval.Repr(value), pyval.Repr(possible))
}

// listCheck compares lists whose string elements are normalised.
func listCheck(param string, value []any, possible any) verdict {
	std := make([]any, len(value))
	for i, e := range value {
		if s, ok := e.(string); ok {
			e = standardize(s)
		}
		std[i] = e
	}
	found := false
	for _, alt := range pyIter(possible) {
		if d, ok := alt.(*Dict); ok && d.Len() > 0 {
			raise("KeyError: 0")
		}
		items := pyIter(alt)
		sa := make([]any, len(items))
		for j, e := range items {
			if s, ok := e.(string); ok {
				e = standardize(s)
			}
			sa[j] = e
		}
		if pyval.Eq(std, sa) {
			found = true
		}
	}
	if !found {
		return fail("value_error:list/tuple", "parameter %s is %s; want one of %s", pyval.Repr(param), pyval.Repr(value), pyval.Repr(possible))
	}
	return valid
}

// dictCheck compares a dict with each acceptable dict, whose values are
// lists of acceptable values ("" marking an omittable key).
func dictCheck(value any, possibles any) verdict {
	res := fail("dict_checker:unclear", "no acceptable dict to compare with")
	for _, alt := range pyIter(possibles) {
		if s, ok := alt.(string); ok && s == "" {
			continue
		}
		res = fail("dict_checker:unclear", "no acceptable dict to compare with")
		pass := true
		model, ok := value.(*Dict)
		if !ok {
			raise("AttributeError: '%s' object has no attribute 'items'", kindOf(value))
		}
		for _, key := range model.Keys {
			if !pyContains(alt, key) {
				res = fail("value_error:dict_key", "unexpected key %s", pyval.Repr(key))
				pass = false
				break
			}
			v := model.Value(key)
			if s, ok := v.(string); ok {
				v = standardize(s)
			}
			var std []any
			for _, e := range pyItems(pyIndex(alt, key)) {
				if s, ok := e.(string); ok {
					e = standardize(s)
				}
				std = append(std, e)
			}
			if !pyContains(anyList(std), v) {
				res = fail("value_error:dict_value", "key %s is %s; want one of %s", pyval.Repr(key), pyval.Repr(model.Value(key)), pyval.Repr(anyList(std)))
				pass = false
				break
			}
		}
		ad, ok := alt.(*Dict)
		if !ok {
			raise("AttributeError: '%s' object has no attribute 'items'", kindOf(alt))
		}
		for _, key := range ad.Keys {
			if _, given := model.Get(key); !given && !pyContains(ad.Value(key), "") {
				res = fail("value_error:dict_key", "missing key %s", pyval.Repr(key))
				pass = false
				break
			}
		}
		if pass {
			return valid
		}
	}
	return res
}

func anyList(l []any) []any {
	if l == nil {
		return []any{}
	}
	return l
}

// listDictCheck compares a list of dicts with each acceptable list, dict
// by dict, in order.
func listDictCheck(value []any, possibles any) verdict {
	res := fail("list_dict_checker:unclear", "no acceptable list to compare with")
	for _, alt := range pyIter(possibles) {
		elems := pyItems(alt)
		if len(value) != len(elems) {
			res = fail("value_error:list_dict_count", "%d dicts; want %d", len(value), len(elems))
			continue
		}
		pass := true
		for i := range value {
			res = dictCheck(value[i], []any{elems[i]})
			if !res.ok() {
				pass = false
				break
			}
		}
		if pass {
			return valid
		}
	}
	return res
}

// pyItems is what indexing 0..len-1 of v yields: a list's elements, a
// string's characters; a non-empty dict raises (its keys are not ints).
func pyItems(v any) []any {
	if d, ok := v.(*Dict); ok && d.Len() > 0 {
		raise("KeyError: 0")
	}
	return pyIter(v)
}
