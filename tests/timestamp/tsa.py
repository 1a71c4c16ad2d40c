"""A real RFC 3161 timestamping authority for the tests: OpenSSL's ``ts -reply`` behind HTTP.

:func:`make_pki` builds, with the OpenSSL command line, a test root, an intermediate and a
TSA certificate (critical timeStamping EKU) in a folder; :class:`LocalTSA` answers
``application/timestamp-query`` POSTs on 127.0.0.1 by running ``openssl ts -reply`` on each.
The TSA section has no ``certs =`` line, so a reply embeds only the signer certificate.
A TSA can be told to answer slowly (``delay_s``) to stand for one that stalls.
"""

from __future__ import annotations

import http.server
import subprocess
import tempfile
import threading
from pathlib import Path

#: Ways a test TSA can answer badly: a redirect, an HTTP error, a token under the wrong content type.
MISBEHAVIOURS = ("redirect", "error", "html")
#: The policy OID the test TSA puts in its tokens.
TEST_POLICY = "1.3.6.1.4.1.55555.1.1"
#: Largest request the test TSA reads.
_MAX_QUERY_BYTES = 16 * 1024
_OPENSSL_TIMEOUT_S = 60

_CNF = """\
[tsa]
default_tsa = tsa_config

[tsa_config]
serial = {dir}/serial
crypto_device = builtin
signer_cert = {dir}/tsa.crt
signer_key = {dir}/tsa.key
signer_digest = sha256
default_policy = {policy}
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = yes
tsa_name = yes
ess_cert_id_chain = no
ess_cert_id_alg = sha256
"""


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=_OPENSSL_TIMEOUT_S)


def _ext(folder: Path, name: str, lines: str) -> str:
    path = folder / name
    path.write_text(lines)
    return str(path)


def make_pki(folder: Path, name: str) -> Path:
    """Root, intermediate and TSA certificate (P-256 keys) in ``folder``; returns ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", "root.key", "-out", "root.crt", "-days", "3650",
             "-subj", f"/CN={name} Test Root",
             "-addext", "basicConstraints=critical,CA:true",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=folder)
    ca_ext = _ext(folder, "ca.ext", "basicConstraints=critical,CA:true,pathlen:0\n"
                                    "keyUsage=critical,keyCertSign,cRLSign\n")
    _openssl("req", "-new", *ec, "-keyout", "intermediate.key", "-out", "intermediate.csr",
             "-subj", f"/CN={name} Test Intermediate", cwd=folder)
    _openssl("x509", "-req", "-in", "intermediate.csr", "-CA", "root.crt", "-CAkey", "root.key",
             "-CAcreateserial", "-days", "3650", "-extfile", ca_ext, "-out", "intermediate.crt", cwd=folder)
    tsa_ext = _ext(folder, "tsa.ext", "basicConstraints=critical,CA:false\n"
                                      "keyUsage=critical,digitalSignature\n"
                                      "extendedKeyUsage=critical,timeStamping\n")
    _openssl("req", "-new", *ec, "-keyout", "tsa.key", "-out", "tsa.csr", "-subj", f"/CN={name} Test TSA", cwd=folder)
    _openssl("x509", "-req", "-in", "tsa.csr", "-CA", "intermediate.crt", "-CAkey", "intermediate.key",
             "-CAcreateserial", "-days", "3650", "-extfile", tsa_ext, "-out", "tsa.crt", cwd=folder)
    (folder / "serial").write_text("01\n")
    (folder / "tsa.cnf").write_text(_CNF.format(dir=folder, policy=TEST_POLICY))
    return folder


class LocalTSA:
    """OpenSSL's TSA behind an HTTP server on 127.0.0.1; ``url`` is where to POST queries."""

    def __init__(self, pki: Path, delay_s: float = 0.0, misbehave: str | None = None) -> None:
        self.pki = pki
        self.delay_s = delay_s
        self.misbehave = misbehave  # None, or one of MISBEHAVIOURS
        self.requests = 0
        self.release = threading.Event()  # set at close: a delayed answer stops waiting
        self._lock = threading.Lock()  # openssl updates the serial file: one reply at a time
        tsa = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if self.headers.get("Content-Type") != "application/timestamp-query" or length > _MAX_QUERY_BYTES:
                    self.send_error(400, "want an application/timestamp-query")
                    return
                query = self.rfile.read(length)
                tsa.requests += 1
                if tsa.delay_s and tsa.release.wait(tsa.delay_s):
                    return
                if tsa.misbehave == "redirect":
                    self.send_response(307)
                    self.send_header("Location", "ftp://127.0.0.1/elsewhere")
                    self.end_headers()
                    return
                if tsa.misbehave == "error":
                    self.send_error(503, "overloaded")
                    return
                try:
                    reply = tsa.answer(query)
                except subprocess.CalledProcessError:
                    self.send_error(500, "openssl ts -reply failed")
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/html" if tsa.misbehave == "html" else
                                 "application/timestamp-reply")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/tsr"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def answer(self, query: bytes) -> bytes:
        """The DER reply of ``openssl ts -reply`` to a DER query."""
        with self._lock, tempfile.TemporaryDirectory() as work:
            q, r = Path(work) / "q.tsq", Path(work) / "r.tsr"
            q.write_bytes(query)
            _openssl("ts", "-reply", "-config", str(self.pki / "tsa.cnf"), "-section", "tsa_config",
                     "-queryfile", str(q), "-out", str(r), cwd=self.pki)
            return r.read_bytes()

    def close(self) -> None:
        """Stop serving (a delayed answer is released first)."""
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
