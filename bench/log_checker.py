# Checks a node log, downloaded (the lines as printed) or as the workspace stores it ("<ms> <o|e> " before
# each): lines "node <rank> line <i> <pad>" for i = 1..N, each exactly once, in order.
# Prints "<lost> lost, <dup> dup" and exits 1 when anything is wrong.
import sys
path, rank, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen = bytearray(n + 1)
dup = bad = 0
order_ok = True
last = 0
with open(path, "rb") as f:
    for raw in f:
        p = raw.split()
        if len(p) > 2 and p[0].isdigit() and p[1] in (b"o", b"e"):
            p = p[2:]
        if len(p) < 4 or p[0] != b"node" or p[1] != rank.encode() or p[2] != b"line":
            bad += 1
            continue
        i = int(p[3])
        if i < 1 or i > n:
            bad += 1
            continue
        if seen[i]:
            dup += 1
        seen[i] = 1
        order_ok = order_ok and i == last + 1
        last = i
lost = n - sum(seen[1:])
print(f"{lost} lost, {dup} dup" + ("" if bad == 0 else f", {bad} bad") + ("" if order_ok else ", out of order"))
sys.exit(0 if lost == dup == bad == 0 and order_ok else 1)
