// Derives tokenizer.json variants from real files, to check components no shipped npm file combines:
// Mistral / Phi-3 shapes of the Llama 2 SentencePiece tokenizer, Split behaviours, NFKC and NFKD.
// usage: node variants.mjs LLAMA2_TOKENIZER_JSON QWEN3_TOKENIZER_JSON OUT_DIR
// Writes OUT_DIR/<name>/tokenizer.json and tokenizer_config.json for each variant.
import fs from 'node:fs';
import path from 'node:path';

const [llama2Path, qwenPath, outDir] = process.argv.slice(2);
const llama2 = JSON.parse(fs.readFileSync(llama2Path, 'utf8'));
const qwen = JSON.parse(fs.readFileSync(qwenPath, 'utf8'));
const copy = x => JSON.parse(JSON.stringify(x));
const meta = (extra = {}) => ({ type: 'Metaspace', replacement: '\u2581', ...extra });
const withTemplate = (tj, prefix, suffix) => {
  const special = {};
  const single = [];
  for (const t of prefix) { single.push({ SpecialToken: { id: t, type_id: 0 } }); }
  single.push({ Sequence: { id: 'A', type_id: 0 } });
  for (const t of suffix) { single.push({ SpecialToken: { id: t, type_id: 0 } }); }
  for (const t of [...prefix, ...suffix]) special[t] = { id: t, ids: [tj.model.vocab[t] ?? tj.added_tokens.find(a => a.content === t).id], tokens: [t] };
  tj.post_processor = { type: 'TemplateProcessing', single, pair: single, special_tokens: special };
  return tj;
};

const variants = {};

// Mistral v0.3 as transformers converts it today: no normalizer, Metaspace prepending "▁" to the text's first
// piece only, no split; the legacy decoder sequence.
{
  const tj = copy(llama2);
  tj.normalizer = null;
  tj.pre_tokenizer = meta({ prepend_scheme: 'first', split: false });
  tj.added_tokens.push(...['[INST]', '[/INST]', '[TOOL_CALLS]'].map((content, i) => ({
    id: 32000 + i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })));
  variants['mistral-metaspace'] = [tj, { add_bos_token: true, add_eos_token: false, bos_token: '<s>', eos_token: '</s>' }];
}

// Metaspace splitting at every "▁", prepending always, with the Metaspace decoder.
{
  const tj = copy(llama2);
  tj.normalizer = null;
  tj.pre_tokenizer = meta({ prepend_scheme: 'always', split: true });
  tj.decoder = { type: 'Sequence', decoders: [meta({ prepend_scheme: 'always', split: true }), { type: 'ByteFallback' }, { type: 'Fuse' }] };
  variants['metaspace-split'] = [tj, {}];
}

// Phi-3 mini: Llama 2's tokenizer with chat tokens that swallow the whitespace after them (rstrip), and EOS
// added after the text (add_eos_token), BOS before it.
{
  const tj = copy(llama2);
  const names = ['<|endoftext|>', '<|assistant|>', '<|placeholder1|>', '<|system|>', '<|end|>', '<|user|>'];
  tj.added_tokens.push(...names.map((content, i) => ({
    id: 32000 + i, content, single_word: false, lstrip: false, rstrip: content !== '<|endoftext|>',
    normalized: false, special: true })));
  withTemplate(tj, ['<s>'], ['</s>']);
  variants['phi3-like'] = [tj, { add_bos_token: true, add_eos_token: true, bos_token: '<s>', eos_token: '</s>' }];
}

// Split behaviours, Strip and NFKC in front of the SentencePiece model.
{
  const tj = copy(llama2);
  tj.normalizer = { type: 'Sequence', normalizers: [
    { type: 'NFKC' }, { type: 'Strip', strip_left: true, strip_right: true },
    { type: 'Prepend', prepend: '\u2581' }, { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' }] };
  const split = (pattern, behavior, invert = false) => ({ type: 'Split', pattern, behavior, invert });
  tj.pre_tokenizer = { type: 'Sequence', pretokenizers: [
    split({ Regex: '\\p{N}' }, 'Isolated'), split({ Regex: '[.!?]' }, 'Contiguous'),
    split({ String: '\u2581' }, 'MergedWithNext'), split({ Regex: ',' }, 'Removed'),
    split({ Regex: '[aeiou]' }, 'MergedWithPrevious', true)] };
  variants['splits-nfkc'] = [tj, {}];
}

// Qwen3 with NFKD instead of NFC (byte-level BPE after a decomposing normalizer).
{
  const tj = copy(qwen);
  tj.normalizer = { type: 'NFKD' };
  variants['qwen3-nfkd'] = [tj, {}];
}

for (const [name, [tj, config]] of Object.entries(variants)) {
  const dir = path.join(outDir, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(tj));
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify(config));
}
console.error(`variants: ${Object.keys(variants).join(', ')}`);
