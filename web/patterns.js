// Which log lines are errors and which are the failures that end a training job: a copy of the tables of
// core/logs/line.cc (the one home of the log line), which `air logs` and the workspace's search use;
// tests/core/logs/line_test.cc checks that this copy equals them. Case-insensitive: a fatal pattern matches
// when all of its words occur in the line, an error word on its own.
export const FATAL_PATTERNS = [
  ["out of memory"],
  ["outofmemoryerror"],
  ["oom-kill"],
  ["oom killer"],
  ["nccl", "timeout"],
  ["nccl", "timed out"],
  ["watchdog caught collective"],
  ["got async error event"],
  ["tcpstore", "timeout"],
  ["tcpstore", "timed out"],
  ["torch.distributed", "error"],
  ["cuda error"],
  ["illegal memory access"],
  ["segmentation fault"],
  ["sigsegv"],
  ["core dumped"],
  ["sigkill"],
  ["signal 9"],
  ["signal sigterm"],
  ["killed"],
  ["fallen off the bus"],
  ["nvrm: xid", "): 48,"],
  ["nvrm: xid", "): 63,"],
  ["nvrm: xid", "): 64,"],
  ["nvrm: xid", "): 79,"],
  ["nvrm: xid", "): 94,"],
  ["nvrm: xid", "): 95,"],
  ["xid 48"],
  ["xid 63"],
  ["xid 64"],
  ["xid 79"],
  ["xid 94"],
  ["xid 95"],
  ["script failed with exit code"],
  ["command not found"],
];
export const ERROR_WORDS = ["error", "exception", "traceback", "fatal", "killed", "timed out", "timeout", "out of memory", "segmentation fault", "abort"];

// 'fatal', 'error' or '' for one line's text.
export function classify(text) {
  const l = text.toLowerCase();
  if (FATAL_PATTERNS.some((words) => words.every((w) => l.includes(w)))) return 'fatal';
  if (ERROR_WORDS.some((w) => l.includes(w))) return 'error';
  return '';
}

// A stored log line "<unix_ms> <o|e> <text>"; other lines are kept whole as stdout text.
export function parseLine(raw) {
  const m = /^(\d{10,16}) ([oe]) ?(.*)$/s.exec(raw);
  if (!m) return { time: 0, stream: 'o', text: raw };
  return { time: Number(m[1]), stream: m[2], text: m[3] };
}
