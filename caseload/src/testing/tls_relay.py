"""A real SMTP relay for bulkq's tests: aiosmtpd (PyPI) speaking TLS and requiring AUTH.

    tls_relay.py --mode starttls|implicit --dir DIR --user U --password-file F

Makes a throwaway certificate for localhost and 127.0.0.1 (DIR/cert.pem, DIR/key.pem; trusted
by nobody until a client is given cert.pem), listens on 127.0.0.1 on a free port and prints
that port on its first line once it accepts connections. Every accepted message is appended to DIR/mailbox.jsonl as one JSON line (`to`, `user`,
`data`), and every refused AUTH as one line of DIR/refused.jsonl. AUTH PLAIN and LOGIN are
offered only over TLS; only U with the file's password passes. Runs until killed.
"""

import argparse
import asyncio
import datetime
import ipaddress
import json
import os
import ssl

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword


class Mailbox:
    """Keeps every message it is handed, with the user who sent it."""

    def __init__(self, path):
        self.path = path

    async def handle_DATA(self, server, session, envelope):
        record = {
            "to": envelope.rcpt_tos,
            "user": session.auth_data.login.decode() if session.auth_data else None,
            "data": envelope.content.decode("utf-8", "replace"),
        }
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
        return "250 2.0.0 OK"


def authenticator(user, password, refused_path):
    def check(server, session, envelope, mechanism, auth_data):
        ok = (
            isinstance(auth_data, LoginPassword)
            and auth_data.login.decode() == user
            and auth_data.password.decode() == password
        )
        if not ok:
            with open(refused_path, "a", encoding="utf-8") as out:
                out.write(json.dumps({"mechanism": mechanism}) + "\n")
        return AuthResult(success=ok, handled=False, auth_data=auth_data if ok else None)

    return check


def make_certificate(directory):
    """A self-signed certificate for localhost and 127.0.0.1, valid for a day."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bulkq test relay")])
    now = datetime.datetime.now(datetime.timezone.utc)
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path = os.path.join(directory, "cert.pem")
    key_path = os.path.join(directory, "key.pem")
    with open(cert_path, "wb") as out:
        out.write(certificate.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as out:
        out.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    return cert_path, key_path


async def serve(args):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*make_certificate(args.dir))
    with open(args.password_file, encoding="utf-8") as file:
        password = file.read().strip()
    implicit = args.mode == "implicit"

    def session():
        return SMTP(
            Mailbox(os.path.join(args.dir, "mailbox.jsonl")),
            hostname="relay.test",
            tls_context=None if implicit else context,
            require_starttls=not implicit,
            auth_required=True,
            # With implicit TLS the whole connection is encrypted before SMTP starts.
            auth_require_tls=not implicit,
            authenticator=authenticator(
                args.user, password, os.path.join(args.dir, "refused.jsonl")
            ),
        )

    server = await asyncio.get_running_loop().create_server(
        session, "127.0.0.1", 0, ssl=context if implicit else None
    )
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["starttls", "implicit"], required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--password-file", required=True)
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
