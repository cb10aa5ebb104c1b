#!/usr/bin/env python3
"""Renders a chat template with Python's jinja2 the way transformers' apply_chat_template does.

ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the loop-controls extension and a
{% generation %} extension that records the spans of what it renders (transformers' AssistantTracker);
transformers' tojson (json.dumps with ensure_ascii=False), raise_exception and strftime_now (the date pinned
with --date so renders are reproducible).

  render_jinja2.py TEMPLATE CORPUS.jsonl [--date YYYY-MM-DD] > EXPECTED.jsonl
  render_jinja2.py --bench TEMPLATE CORPUS.jsonl SECONDS
  render_jinja2.py --cases CASES.json   (checks that the unit tests' expectations are what jinja2 gives)

Each output line: {"text": ..., "spans": [[start, end], ...]} (UTF-8 byte offsets) or
{"error": "syntax"|"raised"|"runtime", "message": ...}.
"""
import datetime
import json
import sys
import time

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class RaisedByTemplate(jinja2.exceptions.TemplateError):
    pass


class GenerationTracker(Extension):
    tags = {"generation"}

    def __init__(self, environment):
        super().__init__(environment)
        self.spans = None
        self.blocks = None

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation", []), [], [], body).set_lineno(lineno)

    @jinja2.pass_eval_context
    def _generation(self, context, caller):
        rv = caller()
        if self.spans is not None:
            start = len("".join(self.blocks))
            self.spans.append((start, start + len(rv)))
        return rv


def make_environment(date):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTracker, loopcontrols])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise RaisedByTemplate(message)

    def strftime_now(fmt):
        now = datetime.datetime.strptime(date, "%Y-%m-%d") if date else datetime.datetime.now()
        return now.strftime(fmt)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, template, context):
    tracker = next(e for e in env.extensions.values() if isinstance(e, GenerationTracker))
    tracker.spans, tracker.blocks = [], []
    out = tracker.blocks
    # Render chunk by chunk so the tracker sees what came before a block (as transformers does).
    for chunk in template.generate(**context):
        out.append(chunk)
    text = "".join(out)
    spans = [[len(text[:a].encode()), len(text[:b].encode())] for a, b in tracker.spans]
    tracker.spans = None
    return text, spans


def check_cases(path):
    """cases.json: {group: [{template, context, text[, spans] | error[, message]}]}; returns the mismatches."""
    env = make_environment("2026-12-06")
    with open(path, encoding="utf-8") as f:
        groups = json.load(f)
    bad = total = 0
    for group, cases in groups.items():
        for c in cases:
            total += 1
            try:
                text, spans = render(env, env.from_string(c["template"]), c["context"])
                got = {"text": text, "spans": spans}
            except RaisedByTemplate as e:
                got = {"error": "raised", "message": str(e)}
            except jinja2.exceptions.TemplateSyntaxError:
                got = {"error": "syntax"}
            except Exception:
                got = {"error": "runtime"}
            want = {"text": c["text"], "spans": c.get("spans", [])} if "text" in c else {"error": c["error"]}
            if c.get("error") == "raised":
                want["message"] = c["message"]
            if got != want:
                bad += 1
                print(f"{path}: {group}: {c['template']!r}: jinja2 gives {got!r}, the file says {want!r}")
    print(f"{path}: {total} cases, {total - bad} as jinja2 renders them, {bad} differ")
    return 1 if bad else 0


def main(argv):
    if argv[:1] == ["--cases"]:
        return check_cases(argv[1])
    bench = argv[:1] == ["--bench"]
    if bench:
        argv = argv[1:]
    date = None
    if "--date" in argv:
        i = argv.index("--date")
        date = argv[i + 1]
        del argv[i:i + 2]
    env = make_environment(date or ("2026-12-06" if bench else None))
    with open(argv[0], encoding="utf-8") as f:
        source = f.read()
    with open(argv[1], encoding="utf-8") as f:
        contexts = [json.loads(line) for line in f if line.strip()]
    try:
        template = env.from_string(source)
    except jinja2.exceptions.TemplateSyntaxError as e:
        if bench:
            raise
        for _ in contexts:
            print(json.dumps({"error": "syntax", "message": str(e)}, ensure_ascii=False))
        return 0
    if bench:
        seconds = float(argv[2])
        renders, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for c in contexts:
                try:
                    template.render(**c)
                except Exception:
                    pass
                renders += 1
        elapsed = time.perf_counter() - start
        print(f"{renders} renders in {elapsed:.3f} s: {renders / elapsed:.0f} renders/s")
        return 0
    for c in contexts:
        try:
            text, spans = render(env, template, c)
            print(json.dumps({"text": text, "spans": spans}, ensure_ascii=False))
        except RaisedByTemplate as e:
            print(json.dumps({"error": "raised", "message": str(e)}, ensure_ascii=False))
        except jinja2.exceptions.TemplateSyntaxError as e:
            print(json.dumps({"error": "syntax", "message": str(e)}, ensure_ascii=False))
        except Exception as e:  # UndefinedError, TypeError, SecurityError, ...: what jinja2 raises at render
            print(json.dumps({"error": "runtime", "message": f"{type(e).__name__}: {e}"}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
