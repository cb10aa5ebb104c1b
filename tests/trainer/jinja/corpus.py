#!/usr/bin/env python3
"""The conversations the chat-template engine is checked on against Python's jinja2 (one render context a
line: messages, add_generation_prompt, and the template's special tokens merged in by the caller).

  corpus.py [SPECIALS.json] > CORPUS.jsonl

Covers: multi-turn, with and without system, unicode, code with braces, Jinja-looking text inside content,
leading / trailing whitespace and newlines, empty content, tool calls and tool results, reasoning
(<think>) blocks, roles that do not alternate, add_generation_prompt true and false, enable_thinking.
"""
import json
import sys

S = {"role": "system", "content": "You are a helpful assistant."}


def u(text):
    return {"role": "user", "content": text}


def a(text):
    return {"role": "assistant", "content": text}


TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Get the weather in a city, in °C.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name, e.g. \"Zürich\""},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "add", "description": "Adds two numbers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}},
]

CODE = 'def f(x):\n    return {"a": [x, {x}]}  # {{ not jinja }}\n\nprint(f(1))\n'

CONVERSATIONS = [
    [u("Hello!")],
    [u("Hello!"), a("Hi! How can I help?")],
    [S, u("What is 2+2?"), a("4.")],
    [S, u("What is 2+2?"), a("4."), u("And 3+3?"), a("6.")],
    [S, u("What is 2+2?"), a("4."), u("And 3+3?")],
    [u("Write Python code."), a("```python\n" + CODE + "```")],
    [u("Jinja inside: {{ messages }} {% if x %}y{% endif %} {# c #}"), a("{%- raw %}{{ literal }}{% endraw -%}")],
    [u("  leading and trailing spaces  "), a("\n\nnewlines around\n\n")],
    [u(""), a("")],
    [u("Unicode: héllo wörld — ✓ 日本語 emoji 🤖 and combining é"), a("Ответ: да. 中文回答。🙂")],
    [S, u("tabs\tand\r\nCRLF\r\n"), a("\u2028line sep\u2029 and nbsp\u00a0end")],
    [u("quotes ' \" \\ backslash"), a("json-ish {\"a\": 1} and <|im_end|> token text")],
    [{"role": "system", "content": "  System with spaces and\nnewlines.\n"}, u("Hi"), a("Hello")],
    [u("Think first."), a("<think>\nSome reasoning here.\n</think>\n\nThe answer is 42.")],
    [u("Q1"), a("<think>r1</think>A1"), u("Q2"), a("<think>\nr2\n</think>\n\nA2")],
    [u("Q"), {"role": "assistant", "content": "Answer.", "reasoning_content": "Because."}],
    [u("What's the weather in Paris?"),
     {"role": "assistant", "content": "", "tool_calls": [
         {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}]},
     {"role": "tool", "content": "{\"temperature\": 21}"},
     a("It is 21 °C in Paris.")],
    [u("Add 2 and 3, and 4 and 5."),
     {"role": "assistant", "content": "Let me compute.", "tool_calls": [
         {"type": "function", "function": {"name": "add", "arguments": {"a": 2, "b": 3}}},
         {"type": "function", "function": {"name": "add", "arguments": "{\"a\": 4, \"b\": 5}"}}]},
     {"role": "tool", "content": "5"},
     {"role": "tool", "content": "9"},
     a("5 and 9.")],
    [u("<tool_response>\nnot really a tool\n</tool_response>"), a("ok")],
    # Roles that do not alternate (Gemma raises), assistant first, system in the middle.
    [u("one"), u("two"), a("three")],
    [a("I speak first."), u("Then me.")],
    [u("Hi"), a("Hello"), S, u("Again")],
    [S],
    [],
    [u("x" * 300 + " long " + "y" * 300), a("z" * 500)],
    [u("Numbers 12345 and 3.14159"), a("Result: 1e10"), u("More?"), a("No.")],
    # Tool calls with Mistral-style ids (nine alphanumerics, which Mistral's templates require) and tool
    # results that name their call.
    [S, u("Weather in Paris and Oslo?"),
     {"role": "assistant", "content": "", "tool_calls": [
         {"id": "call0Par9", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
         {"id": "c4llOslo9", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
     {"role": "tool", "tool_call_id": "call0Par9", "name": "get_weather", "content": "{\"temperature\": 21}"},
     {"role": "tool", "tool_call_id": "c4llOslo9", "name": "get_weather", "content": "{\"temperature\": 4}"},
     a("Paris 21 °C, Oslo 4 °C."), u("Thanks!")],
]


def contexts(specials):
    out = []
    for conv in CONVERSATIONS:
        for gen in (False, True):
            ctx = dict(specials)
            ctx["messages"] = conv
            ctx["add_generation_prompt"] = gen
            out.append(ctx)
    # Tools, and the thinking switch, where templates read them.
    for conv in (CONVERSATIONS[16], [S, u("Weather?")], [u("Weather?")], CONVERSATIONS[26]):
        ctx = dict(specials)
        ctx.update(messages=conv, tools=TOOLS, add_generation_prompt=True)
        out.append(ctx)
    for flag in (True, False):
        ctx = dict(specials)
        ctx.update(messages=[u("Hi")], add_generation_prompt=True, enable_thinking=flag)
        out.append(ctx)
    return out


def main(argv):
    specials = {}
    if argv:
        with open(argv[0], encoding="utf-8") as f:
            specials = json.load(f)
    for ctx in contexts(specials):
        print(json.dumps(ctx, ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1:])
