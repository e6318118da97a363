package code_test

import (
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/toolcall/code"
)

func TestExtractBoxed(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{`The answer is \boxed{42}.`, "42", true},
		{`\boxed{1} then \boxed{2}`, "2", true},
		{`\boxed{\frac{3}{4}}`, `\frac{3}{4}`, true},
		{`\boxed {7}`, "7", true},
		{`\fbox{5} and \boxed{6}`, "6", true},
		{`\boxed{6} and \fbox{5}`, "5", true},
		{`\boxed{\{1, 2\}}`, `\{1, 2\}`, true},
		{`$\boxed{x = 3}$`, "x = 3", true},
		{`\boxed{2} \boxed{unclosed`, "2", true},
		{`no box here: 42`, "", false},
		{`\boxed`, "", false},
		{`\boxed{open`, "", false},
	}
	for _, c := range cases {
		got, ok := code.ExtractBoxed(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("ExtractBoxed(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// Answers that equal the reference after normalisation, and answers that
// do not.
func TestMatch(t *testing.T) {
	equal := []struct{ answer, reference string }{
		{"42", "42"},
		{" 42 ", "42"},
		{"042", "42"},
		{"42.0", "42"},
		{"+42", "42"},
		{"-7", "-7"},
		{"−7", "-7"},
		{"3/4", "3/4"},
		{"0.75", "3/4"},
		{".75", "3/4"},
		{"6/8", "3/4"},
		{`\frac{3}{4}`, "3/4"},
		{`\dfrac{3}{4}`, "3/4"},
		{`\tfrac34`, "3/4"},
		{`\frac{-3}{4}`, "-3/4"},
		{`-\frac{3}{4}`, "-3/4"},
		{`\left(\frac{3}{4}\right)`, "3/4"},
		{"1,234,567", "1234567"},
		{"1{,}234", "1234"},
		{`1\,234\,567`, "1234567"},
		{"1 234 567", "1234567"},
		{`\$1,200`, "1200"},
		{`$1200$`, "1200"},
		{`\(1200\)`, "1200"},
		{`12\%`, "12"},
		{`90^\circ`, "90"},
		{`\text{12 cm}`, "12"},
		{`12 \text{ cm}`, "12"},
		{"5050 ways", "5050"},
		{"x = 5", "5"},
		{"n=5", "5"},
		{"2^{10}", "1024"},
		{"2^10", "1024"},
		{"2^-1", "1/2"},
		{"-2^2", "-4"},
		{"(-2)^2", "4"},
		{`3 \cdot 4`, "12"},
		{`3 \times 4 + 1`, "13"},
		{`12 \div 8`, "3/2"},
		{"(1+2)*[3-1]/{4}", "3/2"},
		{`\binom{10}{3}`, "120"},
		{"5!", "120"},
		{"5!/3!", "20"},
		{"1e3", "1000"},
		{"2.5e-1", "1/4"},
		{"7.", "7"},
		{"1/3 + 1/6", "1/2"},
		{`\frac{1}{2}+\frac{1}{3}`, "5/6"},
		{"1024", "2^{10}"},
		{"n/a", "N/A"},
	}
	for _, c := range equal {
		v := code.Match(c.answer, c.reference)
		if !v.Match {
			t.Errorf("Match(%q, %q) is false (%s); want equal", c.answer, c.reference, v.Reason)
		}
		if v.Reason == "" {
			t.Errorf("Match(%q, %q) has no reason", c.answer, c.reference)
		}
	}
	different := []struct{ answer, reference, reason string }{
		{"43", "42", "different numbers: 43 ≠ 42"},
		{"-42", "42", "different numbers"},
		{"0.333", "1/3", "different numbers"},
		{"0.3333333333", "1/3", "different numbers"},
		{"4/3", "3/4", "different numbers"},
		{"1,23", "123", "not a number"}, // not thousands separators
		{"2\\frac{1}{2}", "5/2", "not a number"},
		{"2(3)", "6", "not a number"},
		{"3x", "3", "not a number"},
		{"x", "3", "not a number"},
		{"", "3", "not a number"},
		{"1/0", "3", "division by zero"},
		{"3, 4", "3", "not a number"},
		{"9^9^9", "3", "too large"},
		{"2^{1/2}", "3", "not an integer"},
		{"10001!", "3", "factorial"},
		{"5", "five", "different text"},
	}
	for _, c := range different {
		v := code.Match(c.answer, c.reference)
		if v.Match {
			t.Errorf("Match(%q, %q) is true (%s); want different", c.answer, c.reference, v.Reason)
		}
		if !strings.Contains(v.Reason, c.reason) {
			t.Errorf("Match(%q, %q) reason %q; want it to say %q", c.answer, c.reference, v.Reason, c.reason)
		}
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		`\dfrac{6}{8}`:    "3/4",
		"1,000,000":       "1000000",
		"  -0.50 ":        "-1/2",
		`\text{(B)}`:      "(B)",
		"12 apples":       "12",
		`\sqrt{2}`:        `\sqrt{2}`,
		"x = y + 1":       "y+1",
		`\boxed{3}`:       `\boxed{3}`,
		"(2^{3})^{2}":     "64",
		"((((1))))":       "1",
		`\frac{\frac12}2`: "1/4",
	} {
		if got := code.Normalize(in).String(); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
	long := strings.Repeat("1+", 600) + "1"
	if a := code.Normalize(long); a.Value != nil || a.Err == nil {
		t.Errorf("a %d-byte answer was evaluated", len(long))
	}
}

func TestEvalErrors(t *testing.T) {
	for in, want := range map[string]string{
		"(1+2":        "want ')'",
		"1+":          "unexpected end",
		"1/(2-2)":     "division by zero",
		"0^-1":        "division by zero",
		`\frac{1}{0}`: "division by zero",
		`\frac1`:      "want a {group} or a digit",
		"2^99999999":  "too large",
		"abc":         "unexpected",
		"1..2":        "unexpected",
	} {
		_, err := code.Eval(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Eval(%q) error %v; want one that says %q", in, err, want)
		}
	}
	for in, want := range map[string]string{"1^99999999": "1", "(-1)^99999999": "-1", "0^0": "1", "(-1)^-3": "-1"} {
		v, err := code.Eval(in)
		if err != nil || v.RatString() != want {
			t.Errorf("Eval(%q) = %v, %v; want %s", in, v, err, want)
		}
	}
}

func FuzzMatch(f *testing.F) {
	for _, s := range []string{"42", `\frac{3}{4}`, "2^10", "1,000", "(1+2)*3!", `\binom{5}{2}`, "9^9^9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := code.Match(s, "42") // must not panic or hang
		if v.Reason == "" {
			t.Errorf("Match(%q) has no reason", s)
		}
	})
}
