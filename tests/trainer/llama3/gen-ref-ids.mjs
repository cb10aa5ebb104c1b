// Reference results from Hugging Face's tokenizers (the Rust library) for each test string, one JSON line
// each: {text, ids, ids_bos, decoded, decoded_skip}. With --tiktoken RANKS, ids are cross-checked with
// tiktoken (Llama 3 only) and the script fails if the two libraries disagree.
// usage: node gen-ref-ids.mjs TOKENIZER_JSON CASES_JSON [--tiktoken tokenizer.model] > ref.jsonl
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(path.join(process.cwd(), 'index.js'));
const { Tokenizer } = require('tokenizers');
const args = process.argv.slice(2);
const [tokenizerPath, casesPath] = args;
const ranksPath = args.includes('--tiktoken') ? args[args.indexOf('--tiktoken') + 1] : null;

const hf = Tokenizer.fromFile(tokenizerPath);
let tk = null;
if (ranksPath) {
  const { Tiktoken } = require('tiktoken');
  const tj = JSON.parse(fs.readFileSync(tokenizerPath, 'utf8'));
  const specials = Object.fromEntries(tj.added_tokens.map(t => [t.content, t.id]));
  const pattern = tj.pre_tokenizer.pretokenizers[0].pattern.Regex;
  tk = new Tiktoken(fs.readFileSync(ranksPath, 'utf8'), specials, pattern);
}
let disagreements = 0;
const out = [];
for (const text of JSON.parse(fs.readFileSync(casesPath, 'utf8'))) {
  const ids = (await hf.encode(text, null, { addSpecialTokens: false })).getIds();
  const idsBos = (await hf.encode(text)).getIds();
  const decoded = await hf.decode(ids, false);
  const decodedSkip = await hf.decode(idsBos, true);
  if (tk && JSON.stringify(ids) !== JSON.stringify(Array.from(tk.encode(text, 'all')))) {
    disagreements++;
    console.error('tokenizers and tiktoken disagree on', JSON.stringify(text));
  }
  out.push(JSON.stringify({ text, ids, ids_bos: idsBos, decoded, decoded_skip: decodedSkip }));
}
if (tk) tk.free();
process.stdout.write(out.join('\n') + '\n');
if (disagreements) process.exit(1);
