#!/usr/bin/env python3
"""Host-side QEMU monitor channel for guest tests (tests/qemu/run-guest.sh --monitor).

Follows the guest's console log and executes the monitor requests a guest test prints there, one
line each:

    @@qmp SEQ device_del SERIAL     unplug the --ctrl controller SERIAL (QMP device_del)
    @@qmp SEQ device_add SERIAL     plug it in again with the same properties (QMP device_add)
    @@qmp SEQ throttle SERIAL IOPS  limit the controller's image to IOPS requests per second, 0:
                                    no limit (QMP block_set_io_throttle): commands then take
                                    longer than the guest's I/O timeout, a real timeout
    @@qmp SEQ quit                  end QEMU at once, without a guest shutdown (QMP quit)

Only these verbs, and only controllers run-guest.sh declared hot-pluggable (the JSON file given
with --devices: serial -> the QMP device_add arguments), are accepted; anything else is refused
and logged. SEQ is a number the guest picks; a request is executed once per SEQ, so the guest may
print it again (a console line can be garbled by interleaved kernel messages) until it sees the
effect. Every request, QMP command and reply is logged (--log), with a time stamp.

Exits when QEMU's process (--pid) is gone.
"""

import argparse
import json
import os
import re
import socket
import sys
import time

REQ = re.compile(
    r"@@qmp (\d+) (device_del|device_add|throttle|quit)(?: ([A-Za-z0-9-]+))?(?: (\d{1,6}))?\s*$"
)


class Qmp:
    """A QMP client on a unix socket (capabilities negotiated on connect)."""

    def __init__(self, path, deadline):
        self.sock = None
        while self.sock is None:
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(path)
                self.sock = s
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.sock.settimeout(30)
        self.buf = b""
        self.recv()  # greeting
        self.cmd("qmp_capabilities")

    def recv(self):
        """The next JSON message that is not an event."""
        while True:
            while b"\n" not in self.buf:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError("QMP socket closed")
                self.buf += chunk
            line, self.buf = self.buf.split(b"\n", 1)
            msg = json.loads(line)
            if "event" not in msg:
                return msg

    def cmd(self, name, args=None):
        req = {"execute": name}
        if args:
            req["arguments"] = args
        self.sock.sendall(json.dumps(req).encode() + b"\n")
        if name == "quit":
            return {"return": {}}
        return self.recv()


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--console", required=True, help="console log to follow")
    ap.add_argument("--qmp", required=True, help="QMP unix socket")
    ap.add_argument("--devices", required=True, help="JSON: serial -> device_add arguments")
    ap.add_argument("--pid", type=int, required=True, help="QEMU's pid (or its wrapper's)")
    ap.add_argument("--log", required=True, help="log of requests and replies")
    a = ap.parse_args()

    with open(a.devices) as f:
        devices = json.load(f)
    logf = open(a.log, "a", buffering=1)

    def log(msg):
        logf.write(f"[{time.strftime('%H:%M:%S')}] {msg}\n")

    log(f"watching {a.console}; hot-pluggable: {', '.join(sorted(devices)) or '(none)'}")
    qmp = None
    done = set()
    pos = 0
    partial = b""
    while True:
        try:
            with open(a.console, "rb") as f:
                f.seek(pos)
                data = f.read()
                pos += len(data)
        except FileNotFoundError:
            data = b""
        if not data:
            if not alive(a.pid):
                log("QEMU gone; watcher exits")
                return 0
            time.sleep(0.1)
            continue
        partial += data
        lines = partial.split(b"\n")
        partial = lines.pop()
        for raw in lines:
            line = raw.decode("utf-8", "replace").replace("\r", "")
            i = line.find("@@qmp ")
            if i < 0:
                continue
            m = REQ.search(line[i:])
            if not m:
                log(f"refused (not an allowed request): {line[i:]!r}")
                continue
            seq, verb, serial, num = m.group(1), m.group(2), m.group(3), m.group(4)
            if seq in done:
                continue
            done.add(seq)
            if verb == "quit":
                args = None
            elif serial not in devices:
                log(f"refused #{seq} {verb} {serial}: not a hot-pluggable controller")
                continue
            elif verb == "device_del":
                args = {"id": devices[serial]["id"]}
            elif verb == "throttle":
                if num is None:
                    log(f"refused #{seq} throttle {serial}: no IOPS")
                    continue
                verb = "block_set_io_throttle"
                args = {"id": devices[serial]["id"], "iops": int(num)}
                for k in ("bps", "bps_rd", "bps_wr", "iops_rd", "iops_wr"):
                    args[k] = 0
            else:
                args = devices[serial]
            # device_add right after a device_del can find the old device still holding its
            # drive: QEMU finishes deleting an unplugged device some time after the guest saw it
            # go ("Permission conflict on node ..."). Such a refusal is retried for up to 30 s.
            retry_until = time.monotonic() + (30 if verb == "device_add" else 0)
            while True:
                try:
                    if qmp is None:
                        qmp = Qmp(a.qmp, time.monotonic() + 10)
                    reply = qmp.cmd(verb, args)
                except (OSError, ValueError, ConnectionError) as e:
                    log(f"#{seq} {verb} {json.dumps(args)}: QMP error {e}")
                    qmp = None
                    reply = None
                    break
                log(f"#{seq} {verb} {json.dumps(args)} -> {json.dumps(reply)}")
                if "error" not in reply or time.monotonic() > retry_until:
                    break
                time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
