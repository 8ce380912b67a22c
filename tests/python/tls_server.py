"""An MCP server over streamable HTTP behind TLS (the official Python SDK's
FastMCP app under uvicorn), for tests/tests/mcp/tls.rs.

Makes a throw-away certificate authority and a server certificate for
127.0.0.1 and localhost signed by it, writes the CA certificate to argv[1]
(the file a client must trust), listens on 127.0.0.1 on a free port and
prints `PORT <n>` once it accepts connections.
"""

import datetime
import ipaddress
import os
import socket
import sys
import tempfile

import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from mcp.server.fastmcp import FastMCP


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_certificates(ca_path: str, cert_path: str, key_path: str) -> None:
    now = datetime.datetime.now(datetime.timezone.utc)
    valid = (now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1))
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("wasmgate test CA"))
        .issuer_name(_name("wasmgate test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("localhost"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    with open(ca_path, "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )


server = FastMCP("secure")


@server.tool()
def echo(text: str) -> str:
    """Returns `text` with a prefix, so the caller sees it went through TLS."""
    return f"secure echo: {text}"


def main() -> None:
    work = tempfile.mkdtemp()
    cert, key = os.path.join(work, "server.pem"), os.path.join(work, "server.key")
    make_certificates(sys.argv[1], cert, key)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        server.streamable_http_app(), ssl_certfile=cert, ssl_keyfile=key, log_level="warning"
    )
    uv = uvicorn.Server(config)
    port = sock.getsockname()[1]

    # Say the port once uvicorn is up (its startup hook runs after listen).
    original_startup = uv.startup

    async def startup(sockets=None):
        await original_startup(sockets=sockets)
        print(f"PORT {port}", flush=True)

    uv.startup = startup
    uv.run(sockets=[sock])


if __name__ == "__main__":
    main()
