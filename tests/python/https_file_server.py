"""Serves one file over HTTPS on 127.0.0.1, for tests/tests/plugins/trust.rs
(`wasmgate plugin add https://127.0.0.1:PORT/...`).

argv: CA_PATH FILE. Makes a throw-away CA and server certificate (the
helper of tls_server.py), writes the CA certificate to CA_PATH (the client
trusts it through SSL_CERT_FILE), serves FILE at every path, and prints
`PORT <n>` once it listens. Ends when stdin closes.
"""

import http.server
import os
import ssl
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tls_server import make_certificates  # noqa: E402


def main() -> None:
    ca_path, served = sys.argv[1], sys.argv[2]
    work = tempfile.mkdtemp()
    cert, key = os.path.join(work, "server.pem"), os.path.join(work, "server.key")
    make_certificates(ca_path, cert, key)
    with open(served, "rb") as f:
        body = f.read()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the stdlib's name)
            self.send_response(200)
            self.send_header("Content-Type", "application/wasm")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    print(f"PORT {httpd.server_address[1]}", flush=True)
    sys.stdin.read()
    httpd.shutdown()


if __name__ == "__main__":
    main()
