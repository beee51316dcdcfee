#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Bytes a client may send kmemd's HTTP/1.1, over real TLS, and what it
must answer: each case prints "ok: ..." or exits 1 with what went wrong.

  http-raw.py PORT CA CERT KEY CASE

CASE: pipelined, chunked, continue, http10, close, headers-too-long,
not-http, version, too-large, no-reader.
"""
import socket
import ssl
import sys
import time

port, ca, cert, key, case = sys.argv[1:6]


def fail(why):
    print(f"FAIL: {case}: {why}")
    sys.exit(1)


def connect():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(ca)
    ctx.load_cert_chain(cert, key)
    raw = socket.create_connection(("127.0.0.1", int(port)), timeout=20)
    return ctx.wrap_socket(raw, server_hostname="127.0.0.1")


def read_reply(f):
    """(status, headers, body) of the next reply; None at the end of the stream."""
    line = f.readline()
    if not line:
        return None
    parts = line.decode("latin-1").split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        fail(f"not a status line: {line!r}")
    headers = {}
    while True:
        h = f.readline()
        if h in (b"\r\n", b""):
            break
        name, _, value = h.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    n = int(headers.get("content-length", "0"))
    body = f.read(n)
    if len(body) != n:
        fail(f"body cut at {len(body)} of {n} bytes")
    return int(parts[1]), headers, body


def closed(s, f):
    """The server ends the connection: nothing more, then the end of the stream."""
    try:
        return f.read(1) == b""
    except (ConnectionResetError, ssl.SSLError):
        return True


def expect(reply, status, what):
    if reply is None:
        fail(f"{what}: no reply")
    if reply[0] != status:
        fail(f"{what}: {reply[0]} {reply[2][:200]!r}, not {status}")


def refused(request, status, what):
    s = connect()
    f = s.makefile("rb")
    s.sendall(request)
    r = read_reply(f)
    expect(r, status, what)
    if r[1].get("connection") != "close":
        fail(f"{what}: {status} without Connection: close")
    if not closed(s, f):
        fail(f"{what}: the connection stayed open after {status}")
    print(f"ok: {what}: {status}, and the connection closed")


if case == "pipelined":
    s = connect()
    f = s.makefile("rb")
    s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: k\r\n\r\n"
              b"GET /v1/policies HTTP/1.1\r\nHost: k\r\n\r\n"
              b"GET /no/such HTTP/1.1\r\nHost: k\r\n\r\n")
    a, b, c = read_reply(f), read_reply(f), read_reply(f)
    expect(a, 200, "health")
    if a[2] != b"ok\n":
        fail(f"health said {a[2]!r}")
    expect(b, 200, "policies")
    if b[1].get("content-type") != "application/json":
        fail(f"policies in {b[1].get('content-type')}")
    expect(c, 404, "no such route")
    print("ok: three pipelined requests answered in order on one connection")
elif case == "chunked":
    s = connect()
    f = s.makefile("rb")
    s.sendall(b"POST /v1/rollouts/plan HTTP/1.1\r\nHost: k\r\n"
              b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
              b"5\r\n{\"nam\r\n")
    time.sleep(0.2)
    s.sendall(b"4\r\ne\": \r\n3\r\n12}\r\n0\r\n\r\n")
    r = read_reply(f)
    # the document was read whole: refused by the rollout parser, in JSON
    expect(r, 400, "a chunked rollout document")
    if r[1].get("content-type") != "application/json" or b"name" not in r[2]:
        fail(f"a chunked body was not read as one document: {r[2]!r}")
    print(f"ok: a chunked body is read whole ({r[2].decode().strip()})")
elif case == "continue":
    s = connect()
    f = s.makefile("rb")
    body = b'{"name": 12}'
    s.sendall(b"POST /v1/rollouts/plan HTTP/1.1\r\nHost: k\r\n"
              b"Content-Type: application/json\r\nExpect: 100-continue\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body))
    r = read_reply(f)
    expect(r, 100, "Expect: 100-continue")
    s.sendall(body)
    expect(read_reply(f), 400, "the body after 100 Continue")
    print("ok: Expect: 100-continue is answered 100, then the request")
elif case == "http10":
    s = connect()
    f = s.makefile("rb")
    s.sendall(b"GET /v1/health HTTP/1.0\r\n\r\n")
    expect(read_reply(f), 200, "HTTP/1.0")
    if not closed(s, f):
        fail("an HTTP/1.0 connection without keep-alive stayed open")
    s = connect()
    f = s.makefile("rb")
    s.sendall(b"GET /v1/health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    r = read_reply(f)
    expect(r, 200, "HTTP/1.0 keep-alive")
    if r[1].get("connection") != "keep-alive":
        fail("HTTP/1.0 keep-alive not confirmed")
    s.sendall(b"GET /v1/health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    expect(read_reply(f), 200, "a second HTTP/1.0 request")
    print("ok: HTTP/1.0 closes after its reply, or keeps the connection when asked")
elif case == "close":
    s = connect()
    f = s.makefile("rb")
    s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: k\r\nConnection: close\r\n\r\n"
              b"GET /v1/health HTTP/1.1\r\nHost: k\r\n\r\n")
    r = read_reply(f)
    expect(r, 200, "Connection: close")
    if r[1].get("connection") != "close" or not closed(s, f):
        fail("Connection: close did not end the connection after one reply")
    print("ok: Connection: close ends the connection after its reply")
elif case == "headers-too-long":
    refused(b"GET /v1/health HTTP/1.1\r\nX-Pad: " + b"a" * 20000 + b"\r\n\r\n",
            431, "20,000 bytes of headers")
elif case == "not-http":
    refused(b"HELLO kmemd\r\n\r\n", 400, "bytes that are not HTTP")
elif case == "version":
    refused(b"GET /v1/health HTTP/2.0\r\n\r\n", 505, "HTTP/2.0 in an HTTP/1 request line")
elif case == "too-large":
    # refused on its Content-Length, before any of the body is sent
    refused(b"POST /v1/policies HTTP/1.1\r\nHost: k\r\nContent-Type: application/json\r\n"
            b"Content-Length: 999999999\r\n\r\n", 413, "a body of 999,999,999 bytes announced")
elif case == "no-reader":
    # requests sent, replies never read: kmemd stops reading this client
    # once its replies fill the socket, then closes it at io_timeout
    s = connect()
    s.settimeout(30)
    req = b"GET /metrics HTTP/1.1\r\nHost: k\r\n\r\n"
    sent = 0
    s.setblocking(False)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            sent += s.send(req * 64) // len(req)
        except (ssl.SSLWantWriteError, BlockingIOError):
            time.sleep(0.05)
            if sent >= 20000:
                break
        except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
            break
    s.setblocking(True)
    time.sleep(float(sys.argv[6]) + 2)
    s.settimeout(10)
    f = s.makefile("rb")
    got = 0
    try:
        while read_reply(f) is not None:
            got += 1
    except (ConnectionResetError, ssl.SSLError):
        pass
    except socket.timeout:
        fail(f"{got} replies read, then the connection stayed open past io_timeout")
    if got >= sent:
        fail(f"all {sent} requests answered: kmemd never stopped reading a client that does not read")
    print(f"ok: a client that does not read: {got} of {sent} requests answered, then closed")
else:
    fail("no such case")
