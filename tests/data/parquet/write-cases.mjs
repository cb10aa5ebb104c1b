// Writes Parquet files with parquet-wasm (arrow-rs compiled to WebAssembly), an independent writer, for
// tests/e2e/parquet_oracle.sh: the same rows in every supported codec x page version x dictionary setting,
// the delta encodings, the rows as JSON, and files using features our reader rejects (each with the error it must give).
// Usage: node write-cases.mjs OUT_DIR
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import * as arrow from 'apache-arrow';

const require = createRequire(import.meta.url);
const pq = require('parquet-wasm/node');
const out = process.argv[2];
fs.mkdirSync(out, { recursive: true });

// Rows with repeats (so dictionaries are used), nulls, empty strings, multi-byte UTF-8 and long strings.
const n = 2500;
const words = ['Give three tips for staying healthy.', 'Translate to French:', 'Résumé — 简历 🦙', '', 'x'.repeat(3000)];
const rows = { instruction: [], input: [], output: [], id: [], big: [], score: [], half: [], flag: [] };
for (let i = 0; i < n; i++) {
  rows.instruction.push(words[i % 3] + ' #' + (i % 7));
  rows.input.push(i % 5 === 0 ? null : words[(i * 7) % words.length]);
  rows.output.push('answer ' + i + ' ' + words[i % words.length]);
  rows.id.push(i % 11 === 0 ? null : i - 100);
  rows.big.push(i * 1000003 - 5e12);
  rows.score.push(i % 13 === 0 ? null : i / 8 - 3.25);
  rows.half.push((i % 17) * 0.5);
  rows.flag.push(i % 9 === 0 ? null : i % 3 === 0);
}

function table() {
  const t = arrow.tableFromArrays({
    instruction: arrow.vectorFromArray(rows.instruction, new arrow.Utf8()),
    input: arrow.vectorFromArray(rows.input, new arrow.Utf8()),
    output: arrow.vectorFromArray(rows.output, new arrow.Utf8()),
    id: arrow.vectorFromArray(rows.id, new arrow.Int32()),
    big: arrow.vectorFromArray(rows.big.map(BigInt), new arrow.Int64()),
    score: arrow.vectorFromArray(rows.score, new arrow.Float64()),
    half: arrow.vectorFromArray(rows.half, new arrow.Float32()),
    flag: arrow.vectorFromArray(rows.flag, new arrow.Bool()),
  });
  return pq.Table.fromIPCStream(arrow.tableToIPC(t, 'stream'));
}

function write(name, configure) {
  let b = new pq.WriterPropertiesBuilder().setMaxRowGroupSize(1000).setDataPageSizeLimit(8192);
  b = configure(b);
  fs.writeFileSync(path.join(out, name), pq.writeParquet(table(), b.build()));
}

fs.writeFileSync(path.join(out, 'rows.json'), JSON.stringify(rows));
const supported = [];
for (const [codec, c] of [['none', pq.Compression.UNCOMPRESSED], ['snappy', pq.Compression.SNAPPY],
                          ['gzip', pq.Compression.GZIP], ['zstd', pq.Compression.ZSTD]]) {
  for (const [ver, v] of [['v1', pq.WriterVersion.V1], ['v2', pq.WriterVersion.V2]]) {
    for (const dict of [true, false]) {
      const name = `${codec}-${ver}-${dict ? 'dict' : 'plain'}.parquet`;
      // Without a dictionary, v2 writers pick DELTA_* encodings; ask for PLAIN, which we read.
      write(name, b => {
        b = b.setCompression(c).setWriterVersion(v).setDictionaryEnabled(dict);
        return dict ? b : b.setEncoding(pq.Encoding.PLAIN);
      });
      supported.push(name);
    }
  }
}
// The delta encodings: what arrow-rs picks for v2 pages without a dictionary (DELTA_BYTE_ARRAY strings,
// DELTA_BINARY_PACKED integers, RLE booleans), and DELTA_LENGTH_BYTE_ARRAY asked for by name.
for (const codec of [['none', pq.Compression.UNCOMPRESSED], ['zstd', pq.Compression.ZSTD]]) {
  const name = `${codec[0]}-v2-delta.parquet`;
  write(name, b => b.setCompression(codec[1]).setWriterVersion(pq.WriterVersion.V2).setDictionaryEnabled(false));
  supported.push(name);
}
write('delta-length.parquet', b => b.setWriterVersion(pq.WriterVersion.V2).setDictionaryEnabled(false)
  .setEncoding(pq.Encoding.PLAIN).setColumnEncoding('output', pq.Encoding.DELTA_LENGTH_BYTE_ARRAY)
  .setColumnEncoding('instruction', pq.Encoding.DELTA_LENGTH_BYTE_ARRAY));
supported.push('delta-length.parquet');
// Features we do not read, and the words the error must contain.
const unsupported = [
  ['lz4raw.parquet', b => b.setCompression(pq.Compression.LZ4_RAW), 'compression codec LZ4_RAW is not supported'],
  ['brotli.parquet', b => b.setCompression(pq.Compression.BROTLI), 'compression codec BROTLI is not supported'],
  ['byte-stream-split.parquet', b => b.setDictionaryEnabled(false).setEncoding(pq.Encoding.PLAIN)
      .setColumnEncoding('score', pq.Encoding.BYTE_STREAM_SPLIT), "column 'score': encoding BYTE_STREAM_SPLIT is not supported"],
];
const errors = [];
for (const [name, configure, text] of unsupported) {
  write(name, configure);
  errors.push([name, text]);
}
// A nested column (a list of strings).
const listType = new arrow.List(new arrow.Field('item', new arrow.Utf8(), true));
const withList = new arrow.Table({
  instruction: arrow.vectorFromArray(['a', 'b'], new arrow.Utf8()),
  tags: arrow.vectorFromArray([['x'], ['y', 'z']], listType),
});
fs.writeFileSync(path.join(out, 'nested.parquet'), pq.writeParquet(pq.Table.fromIPCStream(arrow.tableToIPC(withList, 'stream'))));
errors.push(['nested.parquet', "column 'tags': nested columns (structs, lists, maps) are not supported"]);
fs.writeFileSync(path.join(out, 'cases.json'), JSON.stringify({ supported, errors }, null, 1));
console.log(`wrote ${supported.length} readable and ${errors.length} unsupported files to ${out}`);
