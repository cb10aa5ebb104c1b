#!/usr/bin/env python3
# Writes the seed corpora of the libFuzzer targets (tests/fuzz/corpus/<target>/). The files are committed;
# this script documents how they were made and rebuilds them: python3 tests/fuzz/make_seeds.py
import gzip, io, json, os, shutil, struct, tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "corpus")


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def workload():
    ex = os.path.join(ROOT, "examples")
    for dirpath, _, files in os.walk(ex):
        for f in sorted(files):
            if f.endswith(".yaml"):
                put("workload", f, open(os.path.join(dirpath, f), "rb").read())
    put("workload", "anchors.yaml", "a: &x [1, *x]\nb: !!str 3\nc: |\n  text\n? [k]\n: v\n")
    put("workload", "min.yaml", "experiment_name: a\ncompute: {accelerator_type: CPU_1xHOST, num_accelerators: 1}\n"
        "command: x\nmax_retries: 2\ntimeout_minutes: 1\nsecrets: {A: s/k}\n")


def tar_bytes(entries, compress=None):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for kind, name, extra in entries:
            ti = tarfile.TarInfo(name)
            data = b""
            if kind == "f":
                data = extra.encode()
                ti.size = len(data)
            elif kind == "d":
                ti.type = tarfile.DIRTYPE
            elif kind == "l":
                ti.type, ti.linkname = tarfile.SYMTYPE, extra
            elif kind == "h":
                ti.type, ti.linkname = tarfile.LNKTYPE, extra
            elif kind == "c":
                ti.type, ti.devmajor, ti.devminor = tarfile.CHRTYPE, 1, 3
            elif kind == "s":
                data = extra.encode()
                ti.size, ti.mode = len(data), 0o4755
            t.addfile(ti, io.BytesIO(data))
    raw = buf.getvalue()
    return gzip.compress(raw, mtime=0) if compress == "gz" else raw


def unpack():
    cases = {
        "ok": [("d", "pkg", ""), ("f", "pkg/a.py", "print(1)\n"), ("l", "link", "pkg/a.py"), ("h", "hard", "pkg/a.py")],
        "dotdot": [("f", "../evil", "x")],
        "absolute": [("f", "/tmp/evil", "x")],
        "symlink_out": [("l", "out", "../../etc")],
        "symlink_then_write": [("l", "d", "/tmp"), ("f", "d/evil", "x")],
        "hardlink_out": [("h", "h", "../outside")],
        "device": [("c", "null", "")],
        "setuid": [("s", "suid", "#!/bin/sh\n")],
        "duplicate": [("f", "a", "1"), ("f", "a", "2")],
        "chain": [("d", "a", ""), ("l", "a/b", ".."), ("l", "c", "a/b/a/b/../..")],
    }
    for name, entries in cases.items():
        put("unpack", "tar_" + name, b"\x00" + tar_bytes(entries))
    put("unpack", "gz_ok", b"\x00" + tar_bytes(cases["ok"], "gz"))
    # The structured mode: "<type><mode> <path>\t<extra>" lines, written into a tar by the target.
    specs = {
        "ok": "d\x00pkg\nf\x01pkg/run.sh\techo hi\nl\x00ln\tpkg/run.sh\nh\x00hl\tpkg/run.sh\n",
        "escape": "l\x00a\t..\nf\x00a/x\tdata\nl\x00b\t../../x\nh\x04c\tb\n",
        "deep": "d\x00" + "/".join(["d"] * 40) + "\nf\x00" + "/".join(["d"] * 40) + "/f\tx\n",
        "long": "f\x00" + "n" * 300 + "\tx\nl\x00l\t" + "a/" * 2100 + "\n",
        "device": "c\x00dev\n\np\x00fifo\n",
    }
    for name, s in specs.items():
        put("unpack", "spec_" + name, b"\x01" + s.encode())


def api_json():
    bodies = [
        (0, {"workload_yaml": "command: x\n", "file_name": "t.yaml", "base_dir": "/p", "snapshot_digest": "ab" * 32,
             "snapshot_bytes": 10, "idempotency_key": "k"}),
        (1, {"code": "INVALID_ARGUMENT", "message": "bad", "diagnostics": [
            {"severity": "error", "file": "t.yaml", "line": 3, "column": 5, "length": 2, "message": "m",
             "source_line": "  x: 1", "hint": "h"}]}),
        (2, {"key": "loss", "value": "NaN", "timestamp": 1, "step": 2}),
        (3, {"rank": 1, "state": "FAILED", "exit_code": 137, "message": "killed", "pid": 42, "gpus": "0,1"}),
        (5, {"run_id": "r1", "experiment_name": "e", "state": "RUNNING", "num_nodes": 2, "timeout_minutes": 3,
             "attempts": [{"number": 1, "state": "FAILED", "failing_node": 1, "failing_exit_code": 1,
                           "failing_lines": ["boom"], "nodes": [{"rank": 0}, {"rank": 1}],
                           "metrics": [{"key": "l", "value": "-Infinity", "timestamp": 0, "step": 0}]}]}),
        (6, {"runs": [{"run_id": "a"}, {"run_id": "b", "state": "SUCCEEDED"}]}),
        (7, {"run_id": "r", "state": "CANCELED", "already_terminal": True}),
        (8, {"run_id": "r", "attempt": 1, "node_rank": 0, "num_nodes": 2, "command": "echo",
             "env": [["A", "1"]], "secrets": [{"name": "T", "scope": "s", "key": "k"}], "max_log_bytes": 100}),
        (9, {"state": "RUNNING", "exit_code": None, "pid": 7, "last_lines": ["a", "b"]}),
        (10, {"action": "stop"}),
        (11, {"size": 18446744073709551615}),
        (12, {"status": "ok", "version": "0.1.0", "pid": 1}),
        (13, {"run_id": "r", "attempt": 2, "env": {"B": "2"}, "dependencies": ["numpy"], "gpu": True}),
    ]
    for kind, body in bodies:
        put("api_json", "kind%02d.json" % kind, bytes([kind]) + json.dumps(body).encode())
    put("api_json", "logline", b"\x0f1700000000000 e text with spaces")
    put("api_json", "deep", b"\x05" + b"[" * 600 + b"]" * 600)


def log_framing():
    put("log_framing", "lines", b"\x10\x05\x00line one\nline two\n\npartial")
    put("log_framing", "utf8", b"\x04\x03\x01" + "héllo wörld ✓ 日本語テキスト\n".encode() * 3)
    put("log_framing", "long", b"\x08\x20\x00" + b"x" * 500 + b"\n" + b"y" * 70)
    put("log_framing", "crlf", b"\x30\x01\x01a\r\nb\r\n\x00\xff\n")


def redact():
    put("redact", "plain", b"\x03hf_secret_token\x01apikey\x01text with \x02\x00 and \x02\x01 split across reads\n")
    put("redact", "encodings", b"\x07password123\x01x\x01token: cGFzc3dvcmQxMjM= and password%31%32%33 \x02\x00\n")
    put("redact", "overlap", b"\x01aaaa\x01aaab\x01aaaaaaab aaaa \x02\x01\x02\x00 \"aaa\\u0061\"")


def tokenizer():
    put("tokenizer", "ascii", "The quick brown fox jumps over the lazy dog. 12345 !!\n\tindent")
    put("tokenizer", "unicode", "héllo wörld ✓ 日本語 🙂 ﷽ \u200b\u00a0 ")
    put("tokenizer", "special", "<|begin_of_text|>hi<|end_of_text|><|pad|><|")
    put("tokenizer", "invalid", b"\xff\xfe abc \xc3 \xe2\x82 \xf0\x9f\x99 \xed\xa0\x80")
    put("tokenizer", "json", '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}')


def safetensors():
    def st(header, data=b""):
        h = json.dumps(header).encode()
        return struct.pack("<Q", len(h)) + h + data
    put("safetensors", "ok", st({"__metadata__": {"format": "pt"},
                                 "w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
                                 "b": {"dtype": "BF16", "shape": [3], "data_offsets": [16, 22]}}, bytes(22)))
    put("safetensors", "overflow", st({"w": {"dtype": "F32", "shape": [4611686018427387904, 4],
                                             "data_offsets": [0, 0]}}))
    put("safetensors", "truncated", st({"w": {"dtype": "F64", "shape": [8], "data_offsets": [0, 64]}}, bytes(10)))
    put("safetensors", "badlen", struct.pack("<Q", 1 << 62) + b"{}")
    put("safetensors", "empty", b"")


if __name__ == "__main__":
    shutil.rmtree(OUT, ignore_errors=True)
    for f in (workload, unpack, api_json, log_framing, redact, tokenizer, safetensors):
        f()
    print("seeds written to", OUT)
