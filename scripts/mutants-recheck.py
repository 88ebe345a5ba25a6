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
it touched when interrupted (Ctrl-C, SIGTERM, SIGHUP; not SIGKILL: then
`git checkout common/src` puts it back). Do not build in the tree while
it runs: the build would compile the mutant.

A mutant is CAUGHT only when a test fails (a `... FAILED` line); a run
that fails otherwise (a link error, a missing trace) is ERROR, and one
past MUTANT_TIMEOUT seconds (default 600) TIMEOUT. The property tests run
at the suite's full case counts (PROPTEST_CASES is unset for them).
"""

import json
import os
import re
import signal
import subprocess
import sys


def interrupted(signum, _frame):
    # Turned into KeyboardInterrupt so that the `finally` restoring the
    # mutated file runs.
    raise KeyboardInterrupt(f"signal {signum}")


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
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)
    limit = float(os.environ.get("MUTANT_TIMEOUT", "600"))
    env = {k: v for k, v in os.environ.items() if k != "PROPTEST_CASES"}
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
            try:
                # Its own session: a timeout stops the test binaries too,
                # not only cargo.
                proc = subprocess.Popen(
                    ["cargo", "test", "-p", "libratory-common", "--tests", *only],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    env=env,
                    start_new_session=True,
                )
                try:
                    out, _ = proc.communicate(timeout=limit)
                except BaseException:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.communicate()
                    raise
                t = subprocess.CompletedProcess(proc.args, proc.returncode)
                if "could not compile" in out:
                    verdict = "UNVIABLE"
                elif t.returncode == 0:
                    verdict = "MISSED"
                elif re.search(r"^test .* \.\.\. FAILED$", out, re.M):
                    verdict = "CAUGHT"
                else:
                    verdict = f"ERROR (exit {t.returncode}, no test failed: {out.strip().splitlines()[-1:]})"
            except subprocess.TimeoutExpired:
                verdict = f"TIMEOUT ({limit:.0f} s)"
        finally:
            subprocess.run(["patch", "-R", "-s", path], input=diff, text=True, check=True)
        print(f"{line} {verdict}", flush=True)


if __name__ == "__main__":
    main()
