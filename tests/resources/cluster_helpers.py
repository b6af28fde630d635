"""A certificate authority of our own, and the fake API server behind TLS with it.

The token connection only takes https:// addresses, so the tests serve the fake API
(k8s_fake) over real TLS, with a certificate for 127.0.0.1 that the cluster's CA field holds.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
from functools import cache
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.resources.k8s_fake import FakeKubernetes


@cache
def certificate() -> tuple[str, str]:
    """(certificate PEM, key PEM): self-signed, for 127.0.0.1 and localhost."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake-kubernetes")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode(), key_pem.decode()


def with_tls(fake: FakeKubernetes) -> FakeKubernetes:
    """Serve ``fake`` over TLS (call before it starts); its ``url`` becomes https://."""
    cert_pem, key_pem = certificate()
    # The files are read once, into the context: nothing is left behind in the temp folder.
    with tempfile.TemporaryDirectory(prefix="fake-k8s-tls-") as temporary:
        folder = Path(temporary)
        (folder / "cert.pem").write_text(cert_pem)
        (folder / "key.pem").write_text(key_pem)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    fake.server.socket = context.wrap_socket(fake.server.socket, server_side=True)
    fake.url = f"https://127.0.0.1:{fake.port}"
    return fake
