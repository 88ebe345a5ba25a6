"""A Batsim scheduler that misbehaves on purpose, for the fault tests of
manager/tests/batsim.rs: python3 peer.py ENDPOINT MODE.

It binds a ZeroMQ REP socket as pybatsim does and answers like a plain
FCFS-on-node-0 scheduler until MODE makes it fail at its third request:
dies (exits without answering), hangs (never answers), malformed (answers
text that is not JSON), overlap (starts two jobs on the same nodes),
unknown-node (names a resource the cluster lacks), unknown-job (starts a
job that was never submitted).

MODE slow (python3 peer.py ENDPOINT slow LOG) is a well-behaved FCFS
scheduler that thinks 0.5 s per request after SIMULATION_BEGINS, kills
the first job it started at its next request, and appends the event
types of each request to LOG, one JSON list a line.
"""

import json
import sys
import time

import zmq

endpoint, mode = sys.argv[1], sys.argv[2]
sock = zmq.Context().socket(zmq.REP)
sock.bind(endpoint)


def slow(log):
    """MODE slow (see the header)."""
    free, queue, killed, first = [], [], False, None
    while True:
        msg = json.loads(sock.recv_string())
        types = [e["type"] for e in msg["events"]]
        with open(log, "a") as f:
            f.write(json.dumps(types) + "\n")
        now, out = msg["now"], []
        for e in msg["events"]:
            d = e["data"]
            if e["type"] == "SIMULATION_BEGINS":
                free = list(range(d["nb_compute_resources"]))
            elif e["type"] == "JOB_SUBMITTED":
                queue.append(d["job"])
            elif e["type"] == "JOB_COMPLETED":
                for part in d["alloc"].split():
                    lo, _, hi = part.partition("-")
                    free += range(int(lo), int(hi or lo) + 1)
        if "SIMULATION_BEGINS" not in types:
            time.sleep(0.5)
        if first is not None and not killed:
            killed = True
            out.append({"timestamp": now, "type": "KILL_JOB", "data": {"job_ids": [first]}})
        while queue and queue[0]["res"] <= len(free):
            j = queue.pop(0)
            free.sort()
            alloc, free = free[:j["res"]], free[j["res"]:]
            first = first or j["id"]
            out.append({"timestamp": now, "type": "EXECUTE_JOB",
                        "data": {"job_id": j["id"],
                                 "alloc": " ".join(str(n) for n in alloc)}})
        sock.send_string(json.dumps({"now": now, "events": out}))
        if "SIMULATION_ENDS" in types:
            return


if mode == "slow":
    slow(sys.argv[3])
    sys.exit(0)

waiting = []
rounds = 0
while True:
    msg = json.loads(sock.recv_string())
    rounds += 1
    now = msg["now"]
    out = []
    ends = False
    for e in msg["events"]:
        if e["type"] == "SIMULATION_ENDS":
            ends = True
        elif e["type"] == "JOB_SUBMITTED":
            waiting.append(e["data"]["job"])
    if rounds >= 3:
        if mode == "dies":
            sys.exit(3)
        if mode == "hangs":
            time.sleep(3600)
        if mode == "malformed":
            sock.send_string('{"now": 1, "events": [{"timestamp"')
            continue
        if mode == "overlap" and len(waiting) >= 2:
            for j in waiting[:2]:
                alloc = "0" if j["res"] == 1 else "0-%d" % (j["res"] - 1)
                out.append({"timestamp": now, "type": "EXECUTE_JOB",
                            "data": {"job_id": j["id"], "alloc": alloc}})
            waiting = waiting[2:]
        if mode == "unknown-node" and waiting:
            j = waiting.pop(0)
            out.append({"timestamp": now, "type": "EXECUTE_JOB",
                        "data": {"job_id": j["id"],
                                 "alloc": "100000-%d" % (100000 + j["res"] - 1)}})
        if mode == "unknown-job":
            out.append({"timestamp": now, "type": "EXECUTE_JOB",
                        "data": {"job_id": "w0!999999999", "alloc": "0"}})
    sock.send_string(json.dumps({"now": now, "events": out}))
    if ends:
        break
