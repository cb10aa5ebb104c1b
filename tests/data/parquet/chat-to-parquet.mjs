// Writes a conversation dataset as Parquet the way our reader takes it: a `messages` string column holding
// each conversation's JSON list, in row groups of 4 rows (or ROWS). Usage: node chat-to-parquet.mjs IN.jsonl OUT.parquet [ROWS]
import fs from 'node:fs';
import { createRequire } from 'node:module';
import * as arrow from 'apache-arrow';

const require = createRequire(import.meta.url);
const pq = require('parquet-wasm/node');
const [input, output, groupRows] = process.argv.slice(2);
const recs = fs.readFileSync(input, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
const t = arrow.tableFromArrays({
  messages: arrow.vectorFromArray(recs.map((r) => JSON.stringify(r.messages)), new arrow.Utf8()),
});
const props = new pq.WriterPropertiesBuilder().setMaxRowGroupSize(Number(groupRows || 4)).setCompression(pq.Compression.SNAPPY).build();
fs.writeFileSync(output, pq.writeParquet(pq.Table.fromIPCStream(arrow.tableToIPC(t, 'stream')), props));
console.log(`wrote ${recs.length} records to ${output}`);
