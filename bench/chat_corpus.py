#!/usr/bin/env python3
"""Writes N realistic conversations for bench/chat_data.sh: 1 to 4 user/assistant turns, a system message in
half of them, pseudo-English messages of 10 to 200 words with code, numbers and punctuation (seeded).

  chat_corpus.py N MESSAGES.jsonl CONTEXTS.jsonl BOS EOS
MESSAGES.jsonl: {"messages": [...]} records (air-train's input); CONTEXTS.jsonl: the same as render contexts
for tests/trainer/jinja/render_jinja2.py (messages, add_generation_prompt, bos_token, eos_token).
"""
import json
import random
import sys

WORDS = ("the of and to in is that for it as with was on be by this are from or have an they which one you "
         "were her all she there would their we him been has when who will more no if out so said what up its "
         "about into than them can only other new some could time these two may then do first any my now such "
         "like our over man me even most made after also did many before must through back years where much "
         "your way well down should because each just those people how too little state good very make world "
         "still own see men work long get here between both life being under never day same another know while "
         "last might us great old year off come since against go came right used take three model training data "
         "loss gradient token batch layer weight").split()


def sentence(rng):
    n = rng.randint(4, 18)
    w = [rng.choice(WORDS) for _ in range(n)]
    if rng.random() < 0.15:
        w.insert(rng.randrange(len(w)), str(rng.randint(0, 100000)))
    s = " ".join(w)
    return s[0].upper() + s[1:] + rng.choice([".", ".", ".", "?", "!"])


def message(rng):
    words_target = rng.randint(10, 200)
    parts, words = [], 0
    while words < words_target:
        if rng.random() < 0.08:
            parts.append("```python\ndef f(x):\n    return {\"x\": x * %d}\n```" % rng.randint(1, 9))
            words += 8
        else:
            s = sentence(rng)
            parts.append(s)
            words += len(s.split())
    return " ".join(parts) if rng.random() < 0.7 else "\n\n".join(parts)


def main(n, out_messages, out_contexts, bos, eos):
    rng = random.Random(42)
    with open(out_messages, "w", encoding="utf-8") as fm, open(out_contexts, "w", encoding="utf-8") as fc:
        for _ in range(n):
            msgs = []
            if rng.random() < 0.5:
                msgs.append({"role": "system", "content": "You are a helpful assistant. " + sentence(rng)})
            for _ in range(rng.randint(1, 4)):
                msgs.append({"role": "user", "content": message(rng)})
                msgs.append({"role": "assistant", "content": message(rng)})
            fm.write(json.dumps({"messages": msgs}, ensure_ascii=False) + "\n")
            fc.write(json.dumps({"messages": msgs, "add_generation_prompt": False, "bos_token": bos, "eos_token": eos},
                                ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
