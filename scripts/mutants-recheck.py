#!/usr/bin/env python3
"""Reruns the mutants a cargo-mutants run missed against the tree as it is
now (after new tests), one at a time, in place, and says of each whether
the libratory-common tests now catch it.

    scripts/mutants-recheck.py MISSED_TXT [--window N] [--only TEST]

MISSED_TXT is a run's `mutants.out/missed.txt` (scripts/mutants.sh writes
them under $MUTANTS_OUT/<module>/). Each line names a mutant by file, line,
column and description; the same mutant is found in the tree's own list
(`cargo mutants --list --json --diff`) by file, column and description,
its line at most N (default 10) away from the recorded one, since code
added or taken out above it since the run moves it. Its diff is applied, `cargo test -p
libratory-common --tests` runs, and the diff is taken back out. Output:
one line per mutant, CAUGHT, MISSED, UNVIABLE or NOMATCH. With `--only
TEST`, only the tests whose names contain TEST run (a quick first look at
what a new test catches; a mutant it misses may still be caught by the
rest, so a final verdict is a run without it).

Why not `scripts/mutants.sh -- -F ...`: that rebuilds the crate in its own
copy, minutes before the first mutant on this 2-core machine; this reuses
the developer's incremental build (~10-20 s a mutant). The tree must be
clean: the script refuses to start otherwise, and it restores every file
it touched even when interrupted.
"""

import json
import os
import re
import subprocess
import sys


def main():
    args = sys.argv[1:]
    window = 10
    if "--window" in args:
        i = args.index("--window")
        window = int(args[i + 1])
        del args[i : i + 2]
    only = []
    if "--only" in args:
        i = args.index("--only")
        only = ["--", args[i + 1]]
        del args[i : i + 2]
    if len(args) != 1:
        sys.exit(__doc__)
    root = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True
    ).stdout.strip()
    os.chdir(root)
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    if dirty.strip():
        sys.exit("error: the tree has uncommitted changes; commit or stash them first")
    missed = []
    with open(args[0]) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            m = re.match(r"(\S+?):(\d+):(\d+): (.*)", line)
            if not m:
                sys.exit(f"error: {args[0]}:{n}: not a mutant line: {line!r}")
            missed.append((line, m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)))
    files = sorted({m[1] for m in missed})
    cmd = ["cargo", "mutants", "-p", "libratory-common", "--list", "--json", "--diff"]
    for f in files:
        cmd += ["-f", f]
    listed = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    for line, path, lineno, col, desc in missed:
        cands = [
            x
            for x in listed
            if x["file"] == path
            and x["name"].split(": ", 1)[1] == desc
            and x["span"]["start"]["column"] == col
            and abs(x["span"]["start"]["line"] - lineno) <= window
        ]
        # Two alike lines near each other (say the same sum at both ends
        # of a window) both match: the one nearest the recorded line is it.
        if len(cands) > 1:
            dist = lambda x: abs(x["span"]["start"]["line"] - lineno)
            near = min(dist(x) for x in cands)
            cands = [x for x in cands if dist(x) == near]
        if len(cands) != 1:
            print(f"{line} NOMATCH ({len(cands)} candidates)", flush=True)
            continue
        diff = cands[0]["diff"]
        subprocess.run(["patch", "-s", path], input=diff, text=True, check=True)
        try:
            t = subprocess.run(
                ["cargo", "test", "-p", "libratory-common", "--tests", *only],
                capture_output=True,
                text=True,
            )
            out = t.stdout + t.stderr
            if "could not compile" in out:
                verdict = "UNVIABLE"
            elif t.returncode != 0:
                verdict = "CAUGHT"
            else:
                verdict = "MISSED"
        finally:
            subprocess.run(["patch", "-R", "-s", path], input=diff, text=True, check=True)
        print(f"{line} {verdict}", flush=True)


if __name__ == "__main__":
    main()
