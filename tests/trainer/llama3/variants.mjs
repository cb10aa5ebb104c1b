// Derives variants of a byte-level tokenizer.json that exercise the other options we claim to support,
// each in OUTDIR/<name>/tokenizer.json: merges as [a, b] pairs, ignore_merges off, GPT-2 style
// ByteLevel(use_regex) with add_prefix_space, a template with a suffix token, and added tokens with
// lstrip / rstrip / single_word / normalized / non-special flags.
// usage: node variants.mjs TOKENIZER_JSON OUTDIR
import fs from 'node:fs';
import path from 'node:path';

const [input, outDir] = process.argv.slice(2);
const base = JSON.parse(fs.readFileSync(input, 'utf8'));
const clone = () => JSON.parse(JSON.stringify(base));
const nextId = () => Math.max(...Object.values(base.model.vocab), ...base.added_tokens.map(t => t.id)) + 1;
const token = (id, content, flags) => ({ id, content, single_word: false, lstrip: false, rstrip: false,
  normalized: false, special: true, ...flags });
const variants = {};

variants['as-is'] = clone();

{
  const t = clone();
  t.model.ignore_merges = false;
  t.model.merges = t.model.merges.map(m => m.split(' '));
  const eos = t.added_tokens[1] ?? t.added_tokens[0];
  const tp = t.post_processor.processors.find(p => p.type === 'TemplateProcessing');
  tp.single.push({ SpecialToken: { id: eos.content, type_id: 0 } });
  tp.special_tokens[eos.content] = { id: eos.content, ids: [eos.id], tokens: [eos.content] };
  variants['pairs-no-ignore-merges-eos'] = t;
}

{
  const t = clone();
  t.pre_tokenizer = { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true };
  t.post_processor = { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true };
  t.model.ignore_merges = false;
  let id = nextId();
  t.added_tokens.push(token(id++, '[MASK]', { lstrip: true, rstrip: true }));
  t.added_tokens.push(token(id++, '<tool>', { special: false, normalized: true }));
  t.added_tokens.push(token(id++, 'wordy', { special: false, single_word: true }));
  t.added_tokens.push(token(id++, '<|end', { special: false }));
  variants['gpt2-style-added-tokens'] = t;
}

{
  const t = clone();
  t.pre_tokenizer.pretokenizers[1].add_prefix_space = true;
  let id = nextId();
  t.added_tokens.push(token(id++, ' spaced ', { special: false, normalized: false }));
  t.added_tokens.push(token(id++, 'é', { special: false, normalized: true, rstrip: true }));
  variants['prefix-space-odd-added'] = t;
}

{
  // Hugging Face ignores added tokens' "id" fields: ids follow the vocabulary in file order, a repeated
  // content keeps its first id (and becomes special if any entry is), content in the vocabulary keeps that id.
  const t = clone();
  const id = nextId();
  t.added_tokens.push(token(id + 40, '<gap>', {}));
  t.added_tokens.push(token(id + 41, '<dup>', { special: false }));
  t.added_tokens.push(token(id + 42, '<dup>', { special: true, rstrip: true }));
  t.added_tokens.push(token(id + 43, 'the', { special: false }));
  variants['reassigned-added-ids'] = t;
}

for (const [name, t] of Object.entries(variants)) {
  fs.mkdirSync(path.join(outDir, name), { recursive: true });
  fs.writeFileSync(path.join(outDir, name, 'tokenizer.json'), JSON.stringify(t, null, 1));
}
console.error(`variants: ${Object.keys(variants).join(', ')}`);
