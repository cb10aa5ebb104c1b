// Writes real chat templates out of @huggingface/ollama-utils' map of GGUF chat templates (the
// `tokenizer.chat_template` that llama.cpp's converter copies from a model's tokenizer_config.json), for the
// families npm has no tokenizer package of (Phi-3, Phi-3.5, Phi-4, Mistral 7B, Mixtral 8x22B, Mistral Small).
//
//   node ollama_templates.mjs AUTOMAP.ts OUT_DIR NAME=MODEL ...
//
// AUTOMAP.ts is the package's src/chat-template-automap.ts: one array literal of {model, gguf, ollama}
// entries. Each NAME=MODEL writes OUT_DIR/NAME.jinja with the `gguf` template of the entry whose model is
// MODEL (e.g. phi3=library/phi3:3.8b). Exits 1 naming what is missing when the file or an entry is not there.
import { readFileSync, writeFileSync } from "node:fs";

const [automap, outDir, ...wanted] = process.argv.slice(2);
if (!automap || !outDir || wanted.length === 0) {
  console.error("usage: node ollama_templates.mjs AUTOMAP.ts OUT_DIR NAME=MODEL ...");
  process.exit(2);
}
const source = readFileSync(automap, "utf8");
// The file is TypeScript only in its type import and the constant's annotation: drop those and evaluate the
// literal (the package version is pinned by the test's package-lock.json).
const head = /export const OLLAMA_CHAT_TEMPLATE_MAPPING\s*:\s*OllamaChatTemplateMapEntry\[\]\s*=/;
if (!head.test(source)) {
  console.error(`${automap}: no OLLAMA_CHAT_TEMPLATE_MAPPING array (has the package's layout changed?)`);
  process.exit(1);
}
const body = source.replace(/^import type [^\n]*\n/m, "").replace(head, "return ");
const entries = new Function(body)();
let failed = false;
for (const item of wanted) {
  const eq = item.indexOf("=");
  const name = item.slice(0, eq), model = item.slice(eq + 1);
  const entry = entries.find((e) => e.model === model);
  if (eq <= 0 || !entry || typeof entry.gguf !== "string") {
    console.error(`${automap}: no template for '${model}' (wanted as ${name})`);
    failed = true;
    continue;
  }
  writeFileSync(`${outDir}/${name}.jinja`, entry.gguf);
}
process.exit(failed ? 1 : 0);
