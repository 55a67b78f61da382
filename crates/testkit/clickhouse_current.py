#!/usr/bin/env python3
"""A test-only HTTP transport in front of the current ClickHouse engine, embedded by
chdb (PyPI's `chdb` 4.4.0 embeds ClickHouse 26.9).

No current clickhouse-server can be installed where jscope's tests run (no ClickHouse
apt repository, no containers), but chdb runs the real engine in-process. This script
only carries requests: it speaks the subset of ClickHouse's HTTP interface that
jscope's client uses (crates/collector/src/store/clickhouse_http.rs) and hands every
statement, unchanged, to one chdb Session over a data directory, so parsing, planning,
table engines, merges, mutations and the RowBinary encoding and decoding are all the
26.9 engine's own. It is not part of jscope; crates/testkit starts it (ClickHouse
with `Server::Current`).

    python clickhouse_current.py --port PORT --path DATA_DIR [--user NAME:PASSWORD]
                                 [--log FILE]

`--log` appends each statement (its first 300 characters) and its outcome to FILE.

The subset:
- `GET /ping` and `GET /` answer `Ok.`
- the query in the URL (`?query=`) and/or the body; both present: the URL's query,
  a newline, then the body, as ClickHouse joins them;
- `INSERT INTO t (cols) FORMAT F` in the URL with the rows in the body: the rows are
  streamed to the engine in format F (chdb's send_insert: the engine parses them);
- results in the SQL's FORMAT, else TabSeparated (ClickHouse's HTTP default);
- `database=` (or X-ClickHouse-Database) for unqualified names;
- user and password from `user=`/`password=`, X-ClickHouse-User/X-ClickHouse-Key, or
  basic auth; checked against `--user` (default: `default` without a password), a
  mismatch answered 403 with ClickHouse's AUTHENTICATION_FAILED text;
- an error: HTTP 500, X-ClickHouse-Exception-Code, and the engine's own message text.
Any other URL parameter (settings, sessions, compression, ...) is refused with a 500
naming it, so nothing is silently ignored. Requests run one at a time (a lock around
the session); connections are served on threads. The session's settings that chdb
changes from a server's defaults (SERVER_DEFAULTS) are set back first.
"""

import argparse
import base64
import re
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import chdb
from chdb import session as chdb_session

INSERT_WITH_DATA = re.compile(r"(?is)^\s*(INSERT\s+INTO\s+.*?)\s+FORMAT\s+(\w+)\s*;?\s*$")
CODE = re.compile(r"Code:\s*(\d+)")
KNOWN_PARAMS = {"query", "user", "password", "database", "default_format"}
# chdb's defaults that differ from a ClickHouse server's, set back to the server's so
# statements behave as they would there: mutations run in the background (ALTER ...
# DELETE returns before the rows are gone), inserts are written when they return
# rather than buffered as asynchronous inserts, and a statement needs its SELECT.
SERVER_DEFAULTS = {"mutations_sync": 0, "async_insert": 0, "implicit_select": 0}


class Engine:
    """One chdb Session, one statement at a time."""

    def __init__(self, path, log=None):
        self.session = chdb_session.Session(path)
        for name, value in SERVER_DEFAULTS.items():
            self.session.query(f"SET {name} = {value}")
        self.lock = threading.Lock()
        self.log = open(log, "a", encoding="utf-8") if log else None

    def note(self, sql, data, outcome):
        if self.log:
            rows = "" if data is None else f" [{len(data)} bytes of rows]"
            self.log.write(f"{' '.join(sql.split())[:300]}{rows} -> {outcome}\n")
            self.log.flush()

    def run(self, sql, data, database, default_format):
        """Runs `sql` (with `data` as an INSERT's rows when not None); returns bytes."""
        with self.lock:
            try:
                out = self.run_locked(sql, data, database, default_format)
            except Exception as e:
                self.note(sql, data, " ".join(str(e).split())[:300])
                raise
            self.note(sql, data, "ok")
            return out

    def run_locked(self, sql, data, database, default_format):
        if database:
            self.session.query(f"USE `{database}`")
        try:
            if data is not None:
                m = INSERT_WITH_DATA.match(sql)
                ins = self.session.send_insert(m.group(1), m.group(2))
                try:
                    if data:
                        ins.append(data)
                    ins.finish()
                except BaseException:
                    try:
                        ins.cancel()
                    except Exception:
                        pass
                    raise
                return b""
            result = self.session.query(sql, default_format)
            if isinstance(result, (bytes, bytearray)):
                return bytes(result)
            if isinstance(result, str):
                return result.encode()
            return result.bytes() if result is not None else b""
        finally:
            if database:
                self.session.query("USE default")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    engine = None
    users = {}

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, body, code=None):
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=UTF-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-ClickHouse-Server-Display-Name", "jscope-chdb-transport")
        if code is not None:
            self.send_header("X-ClickHouse-Exception-Code", code)
        self.end_headers()
        self.wfile.write(body)

    def fail(self, status, message):
        m = CODE.search(message)
        # From `Code: N.` on: chdb prefixes some of the engine's messages with its own
        # words ("Streaming insert finish failed: ").
        text = message[m.start() if m else 0:].strip() + "\n"
        self.reply(status, text.encode("utf-8", "replace"), m.group(1) if m else "1001")

    def do_GET(self):
        self.handle_request(b"")

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = self.read_chunked()
        else:
            body = self.rfile.read(n) if n else b""
        self.handle_request(body)

    def read_chunked(self):
        out = bytearray()
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(out)
            out += self.rfile.read(size)
            self.rfile.readline()

    def handle_request(self, body):
        url = urllib.parse.urlsplit(self.path)
        params = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        if url.path == "/ping" or (url.path == "/" and not params and not body):
            self.reply(200, b"Ok.\n")
            return
        if url.path != "/":
            self.fail(404, f"Code: 1001. jscope-chdb-transport: no handler for {url.path}")
            return
        unknown = sorted(set(params) - KNOWN_PARAMS)
        if unknown:
            self.fail(500, f"Code: 1001. jscope-chdb-transport: unsupported URL parameter(s) "
                           f"{', '.join(unknown)}")
            return
        user, password = self.credentials(params)
        if self.users.get(user) != password:
            self.fail(403, f"Code: 516. DB::Exception: {user}: Authentication failed: password "
                           "is incorrect, or there is no user with such name. (AUTHENTICATION_FAILED)")
            return
        database = params.get("database") or self.headers.get("X-ClickHouse-Database") or ""
        if database and not re.fullmatch(r"\w+", database):
            self.fail(500, f"Code: 81. DB::Exception: Database {database} does not exist. "
                           "(UNKNOWN_DATABASE)")
            return
        query = params.get("query")
        data = None
        if query is not None and INSERT_WITH_DATA.match(query):
            sql, data = query, body
        elif query is not None and body:
            sql = query + "\n" + body.decode("utf-8", "replace")
        elif query is not None:
            sql = query
        else:
            sql = body.decode("utf-8", "replace")
        if not sql.strip():
            self.fail(500, "Code: 62. DB::Exception: Empty query. (SYNTAX_ERROR)")
            return
        try:
            out = self.engine.run(sql, data, database,
                                  params.get("default_format") or "TabSeparated")
        except Exception as e:  # the engine's exception: its message is ClickHouse's
            self.fail(500, str(e))
            return
        self.reply(200, out)

    def credentials(self, params):
        user = params.get("user") or self.headers.get("X-ClickHouse-User")
        password = params.get("password") or self.headers.get("X-ClickHouse-Key")
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Basic ") and user is None:
            try:
                user, _, password = base64.b64decode(auth[6:]).decode().partition(":")
            except Exception:
                pass
        return user or "default", password or ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--path", required=True, help="the engine's data directory")
    ap.add_argument("--user", action="append", default=[], help="NAME:PASSWORD (repeatable)")
    ap.add_argument("--log", help="append each statement and its outcome to this file")
    a = ap.parse_args()
    Handler.engine = Engine(a.path, a.log)
    Handler.users = dict(u.partition(":")[::2] for u in a.user) or {"default": ""}
    server = ThreadingHTTPServer((a.host, a.port), Handler)
    server.daemon_threads = True
    version = Handler.engine.run("SELECT version()", None, "", "TabSeparated").decode().strip()
    print(f"clickhouse_current: ClickHouse {version} (chdb {chdb.__version__}) "
          f"on {a.host}:{a.port}, data in {a.path}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
