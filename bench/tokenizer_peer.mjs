// The peer of bench/tokenizer_bench.cc: Hugging Face's tokenizers (Rust, npm binding) encoding the same
// 4 KiB documents one at a time, on one thread (RAYON_NUM_THREADS=1, each call awaited before the next).
// Times are CPU seconds of the whole process (process.cpuUsage), so they hold on a busy machine.
// Prints one line: "peer LOAD_S COLD_S WARM_S MB TOKENS".
// usage: node tokenizer_peer.mjs TOKENIZER_JSON TEXT_FILE   (run where node_modules has `tokenizers`)
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(path.join(process.cwd(), 'index.js'));
const { Tokenizer } = require('tokenizers');
const [tokenizerPath, textPath] = process.argv.slice(2);

// The same documents as tokenizer_bench.cc: 4096 bytes, extended to the next line end.
const bytes = fs.readFileSync(textPath);
const docs = [];
for (let pos = 0; pos < bytes.length;) {
  const nl = bytes.indexOf(10, Math.min(bytes.length, pos + 4096));
  const end = nl < 0 ? bytes.length : nl + 1;
  docs.push(bytes.subarray(pos, end).toString('utf8'));
  pos = end;
}
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
const encodeAll = async tok => {
  let tokens = 0;
  for (const d of docs) tokens += (await tok.encode(d, null, { addSpecialTokens: false })).getIds().length;
  return tokens;
};

let t0 = cpu();
const tok = Tokenizer.fromFile(tokenizerPath);
const loadS = cpu() - t0;
t0 = cpu();
const tokens = await encodeAll(tok);
const coldS = cpu() - t0;
const passes = 3;
t0 = cpu();
for (let p = 0; p < passes; p++) await encodeAll(tok);
const warmS = (cpu() - t0) / passes;
console.log(`peer ${loadS.toFixed(3)} ${coldS.toFixed(3)} ${warmS.toFixed(3)} ${(bytes.length / 1e6).toFixed(3)} ${tokens}`);
