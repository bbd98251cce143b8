#!/usr/bin/env python3
"""Checks an external detector against redctx's protocol (docs/detector-protocol.md).

    python3 scripts/detector_conformance.py [--deadline S] [--expect TEXT VALUE]... PROGRAM

PROGRAM is started as the daemon starts it (no arguments, cwd /). Prints one line per
check and exits 0 when every check passed, 1 otherwise. Standard library only.
"""

import argparse
import json
import os
import queue
import subprocess
import sys
import threading
import time

CATEGORIES = {
    "CLIENT", "ORG", "PERSON", "SENSITIVE", "ENTITY", "EMAIL", "PHONE", "URL", "HANDLE",
    "SECRET", "SSN", "CARD", "IP", "ID", "DOMAIN", "IBAN", "MAC", "DOB", "PASSPORT",
    "DRIVER_ID", "CONNECTION", "SERVICE_ACCOUNT", "UNICODE_CONTROL", "PROMPT_INJECTION",
}
MAX_SPANS = 20_000
HELLO_DEADLINE = 120.0


class Failure(Exception):
    pass


class Detector:
    """The program under test, spoken to as the daemon does."""

    def __init__(self, program):
        self.proc = subprocess.Popen(
            [program], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, cwd="/", start_new_session=True)
        self.lines = queue.Queue()
        self.gone = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def line(self, deadline):
        if self.gone:
            raise Failure("the detector closed stdout (exited?)")
        try:
            line = self.lines.get(timeout=deadline)
        except queue.Empty:
            raise Failure(f"no line within {deadline:g} s")
        if line is None:
            self.gone = True
            raise Failure("the detector closed stdout (exited?)")
        try:
            msg = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise Failure("a line that is not UTF-8 JSON")
        if not isinstance(msg, dict):
            raise Failure("a message that is not a JSON object")
        return msg

    def send(self, obj):
        if self.gone:
            raise Failure("the detector closed stdout (exited?)")
        try:
            self.proc.stdin.write((json.dumps(obj) + "\n").encode("utf-8"))
            self.proc.stdin.flush()
        except OSError:
            self.gone = True
            raise Failure("the detector closed stdin (exited?)")

    def detect(self, rid, text, deadline):
        self.send({"type": "detect", "id": rid, "text": text})
        started = time.monotonic()
        msg = self.line(deadline)
        return msg, time.monotonic() - started

    def close(self):
        try:
            self.proc.kill()
        except OSError:
            pass
        self.proc.wait()


def check_hello(msg):
    if msg.get("type") != "hello":
        raise Failure("the first line is not a hello")
    if msg.get("protocol") != 1:
        raise Failure("hello: protocol is not 1")
    name = msg.get("name")
    ok = (isinstance(name, str) and 0 < len(name) <= 64 and name[0].isascii()
          and name[0].isalnum()
          and all(c.isascii() and (c.isalnum() or c in "_.-") for c in name))
    if not ok:
        raise Failure("hello: name must match [A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
    version = msg.get("version")
    if (not isinstance(version, str) or not version.strip() or len(version) > 200
            or any(ord(c) < 32 or ord(c) == 127 for c in version)):
        raise Failure("hello: version must be a non-empty string of at most 200 characters")
    paths = msg.get("protected_paths", [])
    if paths is not None and (not isinstance(paths, list)
                              or not all(isinstance(p, str) and p.startswith("/") for p in paths)):
        raise Failure("hello: protected_paths must be a list of absolute paths")
    return f"{name} {version}"


def check_spans(msg, rid, text):
    if msg.get("id") != rid:
        raise Failure(f"answer carries id {msg.get('id')!r}, not {rid}")
    if msg.get("type") != "spans":
        raise Failure(f"answer type {msg.get('type')!r}, not spans")
    spans = msg.get("spans")
    if not isinstance(spans, list):
        raise Failure("answer has no spans list")
    if len(spans) > MAX_SPANS:
        raise Failure("more than 20,000 spans")
    out = []
    for s in spans:
        if not isinstance(s, dict):
            raise Failure("a span is not an object")
        start, end, cat = s.get("start"), s.get("end"), s.get("category")
        if not (type(start) is int and type(end) is int and 0 <= start < end <= len(text)):
            raise Failure(f"invalid span {start!r}..{end!r} over {len(text)} code points")
        if cat not in CATEGORIES:
            raise Failure(f"unsupported category {cat!r}")
        out.append((start, end, cat))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("program")
    p.add_argument("--deadline", type=float, default=30.0)
    p.add_argument("--expect", nargs=2, action="append", default=[],
                   metavar=("TEXT", "VALUE"))
    args = p.parse_args()
    if not os.path.isabs(args.program) or not os.access(args.program, os.X_OK):
        print("PROGRAM must be an absolute path to an executable file", file=sys.stderr)
        return 2

    failures = 0
    rid = 100

    def run(name, fn):
        nonlocal failures
        try:
            detail = fn()
            print(f"ok   {name}" + (f" ({detail})" if detail else ""))
        except Failure as e:
            failures += 1
            print(f"FAIL {name}: {e}")

    d = Detector(args.program)
    try:
        hello = {}

        def hello_check():
            hello.update(d.line(HELLO_DEADLINE))
            return check_hello(hello)

        run("hello", hello_check)
        if failures:
            return 1
        samples = [
            "",
            "plain text without anything sensitive\n",
            "Zoë Łukasiewicz 🙂 wrote to ana@example.org from 10.0.0.1.\n",
            "\n".join(f"line {i}: Maria Santos met John Smith in Lisbon." for i in range(20000)),
        ]
        answers = {}
        for i, text in enumerate(samples):
            def sample(text=text, i=i):
                nonlocal rid
                rid += 7
                msg, took = d.detect(rid, text, args.deadline)
                spans = check_spans(msg, rid, text)
                answers[i] = spans
                return f"{len(text)} code points, {len(spans)} spans, {took:.2f} s"
            run(f"text {i + 1} of {len(samples)}", sample)

        def deterministic():
            nonlocal rid
            rid += 1
            msg, _ = d.detect(rid, samples[2], args.deadline)
            if check_spans(msg, rid, samples[2]) != answers.get(2):
                raise Failure("the same text got different spans")
        run("deterministic", deterministic)

        for text, value in args.expect:
            def expect(text=text, value=value):
                nonlocal rid
                rid += 1
                msg, _ = d.detect(rid, text, args.deadline)
                found = [text[s:e] for s, e, _ in check_spans(msg, rid, text)]
                if value not in found:
                    raise Failure(f"{value!r} not among {found!r}")
            run(f"finds {value!r}", expect)

        def unreadable_request():
            nonlocal rid
            rid += 1
            d.send({"type": "detect", "id": rid, "text": 42})
            msg = d.line(args.deadline)
            if msg.get("type") != "error" or msg.get("id") != rid:
                raise Failure("a request without a text string must get an error answer")
            if set(msg) - {"type", "id"}:
                raise Failure("an error answer must carry only type and id")
        run("error answer", unreadable_request)

        def still_answers():
            nonlocal rid
            rid += 1
            msg, _ = d.detect(rid, "after an error", args.deadline)
            check_spans(msg, rid, "after an error")
        run("answers after an error", still_answers)

        def exits_on_eof():
            try:
                d.proc.stdin.close()
            except OSError:
                pass
            try:
                d.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                raise Failure("still running 10 s after stdin closed")
        run("exits at end of input", exits_on_eof)
    finally:
        d.close()
    print("conformant" if failures == 0 else f"{failures} check(s) failed")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
