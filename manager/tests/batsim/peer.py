"""A Batsim scheduler that misbehaves on purpose, for the fault tests of
manager/tests/batsim.rs: python3 peer.py ENDPOINT MODE.

It binds a ZeroMQ REP socket as pybatsim does and answers like a plain
FCFS-on-node-0 scheduler until MODE makes it fail at its third request:
dies (exits without answering), hangs (never answers), malformed (answers
text that is not JSON), overlap (starts two jobs on the same nodes),
unknown-node (names a resource the cluster lacks), unknown-job (starts a
job that was never submitted).
"""

import json
import sys
import time

import zmq

endpoint, mode = sys.argv[1], sys.argv[2]
sock = zmq.Context().socket(zmq.REP)
sock.bind(endpoint)

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
