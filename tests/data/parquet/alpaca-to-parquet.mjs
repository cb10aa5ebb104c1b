// Converts an Alpaca JSON list to Parquet as the hub's datasets are stored (string columns instruction,
// input, output; SNAPPY). Usage: node alpaca-to-parquet.mjs IN.json OUT.parquet
import fs from 'node:fs';
import { createRequire } from 'node:module';
import * as arrow from 'apache-arrow';

const require = createRequire(import.meta.url);
const pq = require('parquet-wasm/node');
const [input, output] = process.argv.slice(2);
const recs = JSON.parse(fs.readFileSync(input, 'utf8'));
const col = k => arrow.vectorFromArray(recs.map(r => r[k] ?? ''), new arrow.Utf8());
const t = arrow.tableFromArrays({ instruction: col('instruction'), input: col('input'), output: col('output') });
const props = new pq.WriterPropertiesBuilder().setCompression(pq.Compression.SNAPPY).build();
fs.writeFileSync(output, pq.writeParquet(pq.Table.fromIPCStream(arrow.tableToIPC(t, 'stream')), props));
console.log(`wrote ${recs.length} records to ${output}`);
