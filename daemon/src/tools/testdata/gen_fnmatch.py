"""Writes fnmatch_cases.txt: `expected<TAB>pattern<TAB>name` lines from Python's fnmatchcase.
Run with the reference's Python (3.11): python gen_fnmatch.py > fnmatch_cases.txt"""
import fnmatch
import random
import warnings

warnings.simplefilter("ignore")
random.seed(7)
PAT = "ab-!]^[*?/\\cz."
NAME = "ab-]^[/\\cz.!"
seen = set()
while len(seen) < 3000:
    pattern = "".join(random.choice(PAT) for _ in range(random.randint(0, 7)))
    if random.random() < 0.5:
        name = "".join(random.choice(NAME) for _ in range(random.randint(0, 6)))
    else:
        # Derived from the pattern, so many cases match.
        name = ""
        for ch in pattern:
            if ch == "*":
                name += "".join(random.choice(NAME) for _ in range(random.randint(0, 2)))
            elif ch in "?[":
                name += random.choice(NAME)
            elif random.random() < 0.9:
                name += ch
    if (pattern, name) in seen:
        continue
    try:
        result = fnmatch.fnmatchcase(name, pattern)
    except Exception:
        continue
    seen.add((pattern, name))
    print(f"{int(result)}\t{pattern}\t{name}")
