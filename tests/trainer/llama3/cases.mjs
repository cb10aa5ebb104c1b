// Writes the test strings (a JSON array) for the tokenizer oracle: hand-picked edge cases, seeded random
// mixes of scripts, and optionally texts of vocabulary entries (the ignore_merges cases among them).
// usage: node cases.mjs [TOKENIZER_JSON [EVERY_NTH_TOKEN]] > cases.json
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const cases = [
  // Literal checks and the empty string.
  'Hello world!', '\n', '🦙', '', ' ', 'a',
  // Contractions (the regex's case-insensitive group) and near misses.
  "I'm sure it's fine, isn't it? They're here; we'll see, you've won, he'd go.",
  "I'M SURE IT'S FINE", "'s 't 're 've 'm 'll 'd", "'S'T'RE'VE'M'LL'D", "'ſ 'K", "rock'n'roll", "''s", "l'été",
  'don’t (curly apostrophe)', "O'Neil's dog", "'", "''", "' s",
  // Digits and number-like text.
  '1', '12', '123', '1234', '12345', '1234567', '12345678901234567890', '3.14159265358979',
  '1,000,000.00', '-42', '+1 (555) 010-9999', 'v1.2.3-rc4', '0x7fffffff', '1e-10', '2024-12-02T12:25:20Z',
  '٣٤٥٦٧ ۱۲۳', '१२३४५', '①②③ ½ ¾ Ⅻ ²³', '１２３４５', 'abc123def4567', '9'.repeat(1000),
  // Whitespace runs, line endings, tabs.
  '   ', 'a  b', 'a   b', 'a \n b', 'a   \n\n  b', '\t\t', '\tindented', '\r\n', 'line1\r\nline2\r\n',
  '\r', '\r\r\n\n', 'x   ', '   x', '\n\n\n', ' \n \n ', 'a\n\n\n\nb', 'end.\n', '  \t \n\t', '\v\f',
  ' '.repeat(5000), 'word' + ' '.repeat(17) + 'word', '\n'.repeat(300), 'a\tb\tc\t\td',
  // Unicode whitespace and near-whitespace: Hugging Face's \s is Unicode White_Space.
  'a\u0085b', '\u0085', 'x \u0085 y', 'a\uFEFFb', '\uFEFF', '\uFEFFhello', 'a\u00A0b', 'a\u00A0\u00A0 b',
  'a\u2003b', 'a\u3000b', 'a\u2028b\u2029c', 'a\u200Bb', 'a\u180Eb', 'a\u1680b', 'a\u202F\u205Fb',
  'a\u001Cb\u001Dc\u001Ed\u001Ff', 'a\u0000b', '\u00A0\n\u00A0',
  // Scripts.
  '你好，世界！这是一个测试。', 'こんにちは、世界。カタカナとひらがな。', '안녕하세요 세계', 'مرحبا بالعالم، كيف حالك؟',
  'שלום עולם', 'नमस्ते दुनिया', 'สวัสดีชาวโลก', 'Привет, мир! Как дела?', 'Γειά σου Κόσμε', 'გამარჯობა',
  'Xin chào thế giới, tôi hiểu', 'Türkçe: yapacaktır, gelecektir, acaktır', 'Ελληνικά και Русский mixed',
  'Ünïcödé àccénts', 'straße STRASSE ß ẞ', 'ﬁ ﬂ ﬃ ligatures', 'İstanbul ıi', 'ǅemal ǈ',
  // ignore_merges cases from the Llama 3 vocabulary.
  ' практи', ' hiểu', 'acaktır', 'практи', ' практика', 'hiểu', ' acaktır',
  // Combining marks and grapheme clusters.
  'e\u0301', 'cafe\u0301', 'Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇', 'a\u0300\u0301\u0302\u0303', '\u0301start', 'ก้ำ',
  'क्षत्रिय', 'ﷺ', '\u200D', 'a\u200Db',
  // Decomposed text for the NFC normalizer (Qwen): accents, Hangul jamo, singletons, marks out of order.
  'cafe\u0301 na\u0308ive re\u0301sume\u0301', 'A\u030a \u212b \u2126 K\u0301', '\u1100\u1161\u11a8 \u1112\u1161\u11ab\u1100\u1173\u11af',
  'Vie\u0323\u0302t Nam, tie\u0302\u0301ng Vie\u0323\u0302t', 'x\u0323\u0307 s\u0307\u0323 q\u0307\u0323', '\u0915\u093c \u0958 \u2000 \u1e9b\u0323',
  'o\u0308\u0304 u\u0308\u0301 \u00fc\u0301', '\ufb01 \u2460 \u00bd \u2163 \uff21\uff42 \u3000 \u00b2 \u01c4',
  // SentencePiece-style text: "▁" written in the text, leading and trailing spaces, <0x..> lookalikes.
  '\u2581', '\u2581\u2581x', 'a\u2581b', '<b> </b>', 'x > </y>  >  </', '\ue000 x \ue001  y', '\u{10ffff} z', '  leading', 'trailing  ', ' ', '<0x41>', '<unk>', '<0xZZ>',
  // Emoji.
  '🦙🦙🦙', '👨‍👩‍👧‍👦 family', '🏳️‍🌈', '🇺🇸🇫🇷', '👍🏽 ok', '❤️ love', 'I ❤ NY', '😀😃😄😁', '🤖: beep', '©®™',
  'x😀y', '1😀2', ' 😀', '😀 ',
  // Code.
  'int main() {\n  return 0;\n}\n',
  'def f(x):\n    if x > 0:\n        return x ** 2\n    return -x\n',
  'for (size_t i = 0; i < n; ++i) { a[i] += b[i] * c; }',
  '{"key": "value", "list": [1, 2, 3], "nested": {"a": null}}',
  '<div class="x">Hello &amp; <b>bye</b></div>', 'SELECT * FROM t WHERE id = 42;',
  'ls -la | grep "\\.cc$" > /tmp/out.txt 2>&1', '#include <vector>\n#include "a/b.h"\n',
  'std::vector<std::string> v{"a", "b"};', 'x => x * 2', '$HOME/${USER}_dir', '/^\\s+(?!\\S)$/gu',
  '    indented\n\tand tab\n', 'a_b_c snake_case CamelCase kebab-case SCREAMING_CASE',
  'https://example.com/path?q=1&r=2#frag', 'user@example.com', '!!!???...', '---===***', '(){}[]<>',
  '.....', '!?', ' !', '  !', ' !\n', '!\n\n', '?\r\n',
  // Special tokens written in the text (Hugging Face treats them as special).
  '<|begin_of_text|>Hello', 'Hello<|end_of_text|>', 'a<|eot_id|>b',
  '<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
  '<|begin_of_text|><|begin_of_text|>', '<|begin_of_text|', '<|begin_of_text|>>', '<<|eot_id|>', ' <|eot_id|> ',
  '<|reserved_special_token_5|>', '<|reserved_special_token_247|>x', '<|BEGIN_OF_TEXT|>', '<|pad|>',
  '<|end_of_text|>', '### Response:\nThe answer.<|end_of_text|>', '<|python_tag|>print(1)<|eom_id|>',
  '<s></s><|endoftext|>', '<|begin_of_text|>\n', '\n<|begin_of_text|>',
  // Special tokens of Qwen, Gemma, Llama 2 / Mistral / Phi-3.
  '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHello<|im_end|>',
  'a<|im_end|>b', '<tool_call>{"x": 1}</tool_call>', '<|endoftext|>',
  '<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\nHello<end_of_turn>\n', '<unused5>x<mask>',
  '<s>[INST] Hi [/INST] Hello</s>', '<s> x', 'x </s>', '[INST]', '<|user|>\nHi<|end|>\n<|assistant|>\nHello<|end|>',
  '<|user|>   spaced<|end|>  \n<|assistant|>', '<|system|>sys<|end|><|endoftext|>',
  // Added tokens of the variants (tests/trainer/llama3/variants.mjs): lstrip/rstrip, single_word, non-special.
  'a [MASK] b', 'a  [MASK]  b', '[MASK][MASK]', ' [MASK]', '[MASK] ', 'x\t[MASK]\n y', 'use <tool> now', '<tool><tool>',
  'wordy', 'a wordy b', 'swordy', 'wordyx', 'wordy!', '(wordy)', '_wordy', 'é', 'café latte', 'é  x', 'it is spaced  out',
  ' spaced spaced ', '<|end', '<|end_of_text|> <|end', 'Hello<|begin_of_text|>world',
  '<gap> <dup>  x', 'the other theme', '<dup><gap><|pad|>',
  // Prose.
  'The quick brown fox jumps over the lazy dog.',
  'In 1969, Apollo 11 landed on the Moon; Neil Armstrong said: "That\'s one small step for [a] man."',
  '### Instruction:\nSummarize the text below.\n\n### Input:\nLlamas are domesticated South American camelids.\n\n### Response:\nLlamas are camelids.',
  'Mr. Smith paid $4.99 for 3 apples (i.e., ~$1.66 each) on 12/02/2026.',
  'e.g. U.S.A. vs. U.K. — a “quoted” ‘thing’ … and ¿qué? ¡sí!',
  'word '.repeat(200), 'Supercalifragilisticexpialidocious antidisestablishmentarianism',
  'a'.repeat(3000), 'ab'.repeat(700), 'The'.repeat(100), '😀'.repeat(200), '你'.repeat(500),
];

// Seeded mixes of characters from many blocks: letters, marks, digits, spaces, symbols, emoji.
const pools = [
  [0x20, 0x7e], [0x09, 0x0d], [0xa0, 0xff], [0x100, 0x17f], [0x300, 0x36f], [0x391, 0x3c9], [0x410, 0x44f],
  [0x5d0, 0x5ea], [0x621, 0x64a], [0x660, 0x669], [0x900, 0x97f], [0xe01, 0xe5b], [0x1100, 0x1112],
  [0x2000, 0x206f], [0x20a0, 0x20bf], [0x2190, 0x21ff], [0x3000, 0x303f], [0x3041, 0x3096], [0x4e00, 0x4fff],
  [0xac00, 0xac7f], [0xfe00, 0xfe0f], [0xff01, 0xff5e], [0x1f300, 0x1f64f], [0x1f900, 0x1f9ff], [0x10400, 0x1044f],
];
let seed = 12345;
const rand = n => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
for (let k = 0; k < 80; k++) {
  let s = '';
  const len = 1 + rand(60);
  for (let i = 0; i < len; i++) {
    const [lo, hi] = pools[rand(pools.length)];
    s += String.fromCodePoint(lo + rand(hi - lo + 1));
  }
  cases.push(s);
}

// Vocabulary entries as text: every Nth one, plus every entry whose merges alone would not rebuild it
// (found by comparing Hugging Face's tokenizers with ignore_merges on and off): the ignore_merges cases.
const [tokenizerPath, everyNth] = process.argv.slice(2);
if (tokenizerPath) {
  const tj = JSON.parse(fs.readFileSync(tokenizerPath, 'utf8'));
  const byteOf = new Map();
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    byteOf.set(String.fromCodePoint(printable ? b : 256 + extra++), b);
  }
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const nth = Number(everyNth ?? 97);
  const texts = [];
  for (const [token, id] of Object.entries(tj.model.vocab)) {
    try {
      const text = decoder.decode(Buffer.from([...token].map(c => byteOf.get(c))));
      texts.push(text);
      if (id % nth === 0) cases.push(text);
    } catch { /* not UTF-8 on its own */ }
  }
  if (tj.model.ignore_merges) {
    const require = createRequire(path.join(process.cwd(), 'index.js'));
    const { Tokenizer } = require('tokenizers');
    const withIgnore = Tokenizer.fromString(JSON.stringify(tj));
    tj.model.ignore_merges = false;
    const without = Tokenizer.fromString(JSON.stringify(tj));
    const a = await withIgnore.encodeBatch(texts, { addSpecialTokens: false });
    const b = await without.encodeBatch(texts, { addSpecialTokens: false });
    let found = 0;
    for (let i = 0; i < texts.length; i++) {
      if (a[i].getIds().join() !== b[i].getIds().join()) { cases.push(texts[i]); found++; }
    }
    console.error(`cases: ${found} vocabulary entries depend on ignore_merges`);
  }
}
console.error(`cases: ${cases.length} strings`);
process.stdout.write(JSON.stringify(cases) + '\n');
