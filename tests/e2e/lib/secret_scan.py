#!/usr/bin/env python3
# Scans files for secret values in every encoding a leak could take: plain, JSON-escaped, base64 and
# base64url (padded, unpadded, and the alignment-independent middle of each when embedded in a longer
# base64 stream), URL-encoded (three styles), hex (lower and upper case).
# Usage: secret_scan.py PATH... with the values in $SCAN_SECRETS (newline-separated). Prints one line per
# hit ("file: form") and a summary; exit 1 when anything was found.
import base64, json, os, sys, urllib.parse


def b64_cores(v, alt):
    out = set()
    for align in range(3):
        framed = bytes(align) + v + bytes(3)
        enc = base64.b64encode(framed, altchars=alt).decode()
        first, end = (8 * align + 5) // 6, (8 * (align + len(v))) // 6
        out.add(enc[first:end])
    return out


def forms(value):
    v = value.encode()
    f = {"plain": {value}, "json": {json.dumps(value)[1:-1]}, "hex": {v.hex(), v.hex().upper()}}
    for name, alt in (("base64", None), ("base64url", b"-_")):
        full = base64.b64encode(v, altchars=alt).decode()
        f[name] = {full, full.rstrip("=")} | b64_cores(v, alt)
    f["url"] = {urllib.parse.quote(value, safe=""), urllib.parse.quote(value), urllib.parse.quote_plus(value),
                urllib.parse.quote(value, safe="").lower()}
    return {k: {s for s in vals if len(s) >= 8} for k, vals in f.items()}


def main():
    secrets = [s for s in os.environ["SCAN_SECRETS"].split("\n") if s]
    patterns = [(kind, s.encode()) for value in secrets for kind, ss in forms(value).items() for s in ss]
    files = hits = 0
    total = 0
    for root in sys.argv[1:]:
        walk = [(root, [], [""])] if os.path.isfile(root) else os.walk(root)
        for d, _, names in walk:
            for n in names:
                p = os.path.join(d, n) if n else d
                if os.path.islink(p) or not os.path.isfile(p):
                    continue
                data = open(p, "rb").read()
                files += 1
                total += len(data)
                for kind, s in patterns:
                    if s in data:
                        hits += 1
                        print("%s: %s form" % (p, kind))
    print("scanned %d files (%d bytes) for %d forms of %d secrets: %d hits" %
          (files, total, len(patterns), len(secrets), hits))
    sys.exit(1 if hits else 0)


main()
