#!/usr/bin/env python3
"""A small external detector for redctx's tests (docs/detector-protocol.md).

It finds `EMP-` followed by four digits (ID) and `Zorblax` followed by a word (PERSON),
at code-point offsets. Options select misbehaviour for the failure tests:

  --name NAME --version V     the hello's identity (default test-ner / 1)
  --delay-ms N                sleep N ms before each answer (a slow model)
  --mode MODE                 ok | bad-hello | no-hello | bad-json | wrong-id |
                              wrong-span | bad-category | hang | crash | error
  --crash-while FILE          exit (a crash) on any request while FILE exists
  --count-file FILE           append one line per text answered
  --protect PATH              list PATH in the hello's protected_paths

Standard library only, so it runs wherever python3 does.
"""

import argparse
import json
import os
import re
import sys
import time

FINDERS = [(re.compile(r"EMP-\d{4}"), "ID"), (re.compile(r"Zorblax \w+"), "PERSON")]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--name", default="test-ner")
    p.add_argument("--version", default="1")
    p.add_argument("--delay-ms", type=int, default=0)
    p.add_argument("--mode", default="ok")
    p.add_argument("--crash-while")
    p.add_argument("--count-file")
    p.add_argument("--protect", action="append", default=[])
    args = p.parse_args()
    out = sys.stdout

    def send(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    print("test detector starting", file=sys.stderr, flush=True)
    if args.mode == "no-hello":
        time.sleep(3600)
    if args.mode == "bad-hello":
        send({"type": "hello", "protocol": 99, "name": args.name, "version": args.version})
    else:
        send({"type": "hello", "protocol": 1, "name": args.name, "version": args.version,
              "protected_paths": args.protect})
    for line in sys.stdin:
        try:
            req = json.loads(line)
        except ValueError:
            sys.exit(2)
        rid = req.get("id") if isinstance(req, dict) else None
        text = req.get("text") if isinstance(req, dict) else None
        if req.get("type") != "detect" or not isinstance(text, str) or not isinstance(rid, int):
            send({"type": "error", "id": rid})
            continue
        # Anything written to stderr after a text arrived may quote it: the daemon
        # logs only its length.
        print("detecting " + text[:40], file=sys.stderr, flush=True)
        if args.crash_while and os.path.exists(args.crash_while):
            os._exit(3)
        mode = args.mode
        if mode == "crash":
            os._exit(3)
        if mode == "hang":
            time.sleep(3600)
        if args.delay_ms:
            time.sleep(args.delay_ms / 1000)
        if mode == "bad-json":
            out.write("{not json\n")
            out.flush()
            continue
        if mode == "error":
            send({"type": "error", "id": rid})
            continue
        spans = []
        for regex, category in FINDERS:
            for m in regex.finditer(text):
                spans.append({"start": m.start(), "end": m.end(), "category": category})
        if mode == "wrong-span":
            spans.append({"start": len(text), "end": len(text) + 5, "category": "ID"})
        if mode == "bad-category":
            spans.append({"start": 0, "end": 1, "category": "NOT_A_CATEGORY"})
        # Counted before the answer, so a caller that has the answer sees the count.
        if args.count_file:
            with open(args.count_file, "a") as f:
                f.write("1\n")
        send({"type": "spans", "id": rid + 1 if mode == "wrong-id" else rid, "spans": spans})


if __name__ == "__main__":
    main()
