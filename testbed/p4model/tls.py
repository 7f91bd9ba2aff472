"""TLS for a switch's two control ports, P4Runtime (gRPC) and the traffic manager's line protocol.

One set of files protects both ports of a switch, so one certificate authority per run decides
who may program it:

* `ServerTls`: the switch's certificate and key, and the CA whose client certificates it takes.
  With `require_client_auth` a client must present a certificate that CA signed; without a
  certificate, or with one of another CA, the TLS handshake fails and no request is read.
  The switch takes them as bmv2's simple_switch_grpc does (`--grpc-server-ssl`,
  `--grpc-server-cert`, `--grpc-server-key`, `--grpc-server-cacert`,
  `--grpc-server-with-client-auth`); the TM control port uses the same files.
* `ClientTls`: the CA that signed the switch's certificate, and the client's own certificate and
  key (the controller's, telemetry's, the shell's). p4runtime-shell takes the same three files
  (`--ssl --cacert --cert --private-key`).

A file that cannot be read is one TestbedError naming it.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from testbed.errors import TestbedError


def _read(path: Path | str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise TestbedError(f"{path}: cannot read the {what}: {error.strerror}") from None


@dataclass(frozen=True)
class ServerTls:
    cert: Path
    key: Path
    ca: Path | None = None
    require_client_auth: bool = False

    def __post_init__(self) -> None:
        if self.require_client_auth and self.ca is None:
            raise TestbedError("client authentication needs the CA certificate that signs the clients "
                               "(--grpc-server-cacert)")

    def grpc_credentials(self):
        import grpc

        pair = (_read(self.key, "TLS private key"), _read(self.cert, "TLS certificate"))
        root = _read(self.ca, "CA certificate") if self.ca is not None else None
        return grpc.ssl_server_credentials([pair], root_certificates=root,
                                           require_client_auth=self.require_client_auth)

    def ssl_context(self) -> ssl.SSLContext:
        """For the TM control port (tm/control.py)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(str(self.cert), str(self.key))
            if self.ca is not None:
                context.load_verify_locations(cafile=str(self.ca))
        except (OSError, ssl.SSLError) as error:
            raise TestbedError(f"{self.cert}: cannot load the switch's TLS files: {error}") from None
        context.verify_mode = ssl.CERT_REQUIRED if self.require_client_auth else ssl.CERT_NONE
        return context


@dataclass(frozen=True)
class ClientTls:
    ca: Path
    cert: Path | None = None
    key: Path | None = None

    def grpc_credentials(self):
        import grpc

        key = _read(self.key, "TLS private key") if self.key is not None else None
        cert = _read(self.cert, "TLS certificate") if self.cert is not None else None
        return grpc.ssl_channel_credentials(_read(self.ca, "CA certificate"), key, cert)

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_verify_locations(cafile=str(self.ca))
            if self.cert is not None and self.key is not None:
                context.load_cert_chain(str(self.cert), str(self.key))
        except (OSError, ssl.SSLError) as error:
            raise TestbedError(f"{self.ca}: cannot load the client's TLS files: {error}") from None
        return context
