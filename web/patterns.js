// Which log lines are errors and which are the failures that end a training job. The workspace's search
// uses the same word lists (server/web/log_lines.cc); tests/server/web/web_test.cc checks they agree.
export const ERROR_WORDS = ['error', 'exception', 'traceback', 'fatal', 'killed', 'timed out', 'timeout',
  'out of memory', 'segmentation fault', 'abort'];
export const FATAL_WORDS = ['out of memory', 'outofmemoryerror', 'oom-kill', 'oom killer', 'segmentation fault',
  'sigkill', 'watchdog caught collective'];

// 'fatal', 'error' or '' for one line's text.
export function classify(text) {
  const l = text.toLowerCase();
  if (l.includes('nccl') && (l.includes('timeout') || l.includes('timed out'))) return 'fatal';
  if (FATAL_WORDS.some((w) => l.includes(w))) return 'fatal';
  if (ERROR_WORDS.some((w) => l.includes(w))) return 'error';
  return '';
}

// A stored log line "<unix_ms> <o|e> <text>"; other lines are kept whole as stdout text.
export function parseLine(raw) {
  const m = /^(\d{10,16}) ([oe]) ?(.*)$/s.exec(raw);
  if (!m) return { time: 0, stream: 'o', text: raw };
  return { time: Number(m[1]), stream: m[2], text: m[3] };
}
