"""Certificates made for one run: a CA of its own, one switch certificate, client certificates.

Nothing is reused across runs: each run makes a fresh CA (ECDSA P-256, valid one day from a
minute ago), signs one certificate that every switch of the run presents (its subject
alternative names: localhost, 127.0.0.1, ::1 and the addresses the run's switches listen on),
and one client certificate per client name (the controller, telemetry, the shell). The CA's
private key is thrown away once they are signed, so no further certificate can be made for the
run. Keys are written with mode 0600 in a directory of mode 0700, and a run deletes them when
it ends (`delete_keys`).

`make_run_certificates(directory, addresses, clients)` returns the `RunCertificates`: the
`ServerTls` the switches take and a `ClientTls` per client name. A client that lacks the CA's
certificate, or holds a certificate of another CA, fails the TLS handshake. A client's
certificate names it `testbed NAME`; `RunCertificates.role_config()` writes the builtin switches'
role config (p4runtime/roles.py) that binds those names: the default role to the controller and
the shell, the read-only role `monitor` to telemetry.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from testbed.errors import TestbedError
from testbed.p4model.tls import ClientTls, ServerTls

VALID_FOR = datetime.timedelta(days=1)
CLIENTS = ("controller", "telemetry", "shell")


@dataclass(frozen=True)
class RunCertificates:
    directory: Path
    ca: Path
    server: ServerTls
    clients: dict[str, ClientTls]

    def role_config(self) -> Path:
        """roles.yaml beside the certificates: who of the run's clients may use which role."""
        path = self.directory / "roles.yaml"
        owners = [common_name(n) for n in ("controller", "shell") if n in self.clients]
        lines = [f"default_role: {{clients: [{', '.join(owners)}]}}", "roles:"]
        lines.append(f"  monitor: {{write: none, clients: [{common_name('telemetry')}]}}")
        path.write_text("\n".join(lines) + "\n")
        return path

    def delete_keys(self) -> None:
        """The run is over: its private keys go (the certificates stay, as a record)."""
        for path in self.directory.glob("*.key"):
            path.unlink(missing_ok=True)

    def client(self, name: str) -> ClientTls:
        if name not in self.clients:
            raise TestbedError(f"{self.directory}: no client certificate named {name!r} "
                               f"(made: {', '.join(sorted(self.clients))})")
        return self.clients[name]


def common_name(client: str) -> str:
    """The common name of client `client`'s certificate."""
    return f"testbed {client}"


def run_client(ca: Path | str, name: str) -> ClientTls:
    """Client `name`'s files of the run whose CA certificate is `ca` (they lie beside it)."""
    directory = Path(ca).parent
    cert, key = directory / f"client-{name}.pem", directory / f"client-{name}.key"
    if not cert.is_file() or not key.is_file():
        raise TestbedError(f"{directory}: the run has no certificate and key for client {name!r} "
                           "(has the run ended?)")
    return ClientTls(Path(ca), cert, key)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "testbed run"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key) -> None:
    data = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _sign(subject: str, public_key, issuer: x509.Name, ca_key, now, extensions) -> x509.Certificate:
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(issuer)
               .public_key(public_key).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=1)).not_valid_after(now + VALID_FOR))
    for extension, critical in extensions:
        builder = builder.add_extension(extension, critical=critical)
    return builder.sign(ca_key, hashes.SHA256())


def _alt_names(addresses) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    seen = set()
    for text in ("127.0.0.1", "::1", *addresses):
        try:
            address = ipaddress.ip_address(text)
        except ValueError:
            if text not in seen:
                names.append(x509.DNSName(text))
        else:
            if address not in seen:
                names.append(x509.IPAddress(address))
            seen.add(address)
        seen.add(text)
    return x509.SubjectAlternativeName(names)


def make_run_certificates(directory: Path, addresses=(), clients=CLIENTS) -> RunCertificates:
    """A fresh CA, the switches' certificate (for `addresses` too) and one client certificate per
    name in `clients`, written into `directory` (created 0700)."""
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        directory.chmod(0o700)
    except OSError as error:
        raise TestbedError(f"{directory}: cannot make the run's certificate directory: {error.strerror}") from None
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = _key()
    ca_name = _name("testbed run CA")
    ca_cert = _sign("testbed run CA", ca_key.public_key(), ca_name, ca_key, now, [
        (x509.BasicConstraints(ca=True, path_length=0), True),
        (x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                       key_encipherment=False, data_encipherment=False, key_agreement=False,
                       encipher_only=False, decipher_only=False), True)])
    ca_path = directory / "ca.pem"
    _write_cert(ca_path, ca_cert)

    def leaf(stem: str, common_name: str, usage, extra=()) -> tuple[Path, Path]:
        key = _key()
        cert = _sign(common_name, key.public_key(), ca_name, ca_key, now, [
            (x509.BasicConstraints(ca=False, path_length=None), True),
            (x509.ExtendedKeyUsage([usage]), False), *extra])
        cert_path, key_path = directory / f"{stem}.pem", directory / f"{stem}.key"
        _write_cert(cert_path, cert)
        _write_key(key_path, key)
        return cert_path, key_path

    server_cert, server_key = leaf("switch", "testbed switch", ExtendedKeyUsageOID.SERVER_AUTH,
                                   [(_alt_names(addresses), False)])
    for name in clients:
        leaf(f"client-{name}", common_name(name), ExtendedKeyUsageOID.CLIENT_AUTH)
    made = {name: run_client(ca_path, name) for name in clients}
    return RunCertificates(directory, ca_path,
                           ServerTls(server_cert, server_key, ca_path, require_client_auth=True), made)
