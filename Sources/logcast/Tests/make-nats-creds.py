#!/usr/bin/env python3
"""Makes what `nsc` would for logcast's credentials-file tests (NatsCredentialsFileTests).

There is no `nsc` on the test machines, so this script plays it: an operator, an account
with JetStream, users, their JWTs signed with Ed25519 NKeys (PyPI's `nkeys`), and `.creds`
files in the decorated format `nsc generate creds` writes (cnats's
`natsOptions_SetUserCredentialsFromFiles` reads the first JWT block and the first seed
block of such a file).

    make-nats-creds.py DIRECTORY

writes into DIRECTORY:
  server.conf    a nats-server fragment: `operator:` (the operator JWT), `resolver: MEMORY`
                 and `resolver_preload` holding the JWTs of the account the users belong
                 to (JetStream allowed) and of the system account
  good.creds     a user of the trusted account
  foreign.creds  a user signed by an account the server does not know (same operator)
  expired.creds  a user of the trusted account whose JWT expired an hour ago
  mismatched.creds  the good user's JWT with another user's seed (signs the nonce wrongly)
and prints `ok` last. Exit status 2 when `nkeys` cannot be imported (the test skips).

The JWT format is the one nats-io/jwt v2 decodes (`decoder.go`, `claims.go`):
  header    {"typ":"JWT","alg":"ed25519-nkey"}
  claims    jti, iat, iss, sub, name, optional exp, and `nats` with type and version 2
  signature Ed25519 by the issuer's key over `base64url(header) + "." + base64url(claims)`
each part base64url without padding. nats-server 2.9 does not check `jti`; it is made as
nsc makes it anyway (base32 of the SHA-512/256 of the claims without `jti`), so a stricter
server takes the files too.
"""

import base64
import hashlib
import json
import os
import sys
import time

try:
    import nkeys
except ImportError:
    print("nkeys is not importable (scripts/ensure-deps.sh installs it with pip)", file=sys.stderr)
    sys.exit(2)

# No limit, in nats-io/jwt's words (`NoLimit`). An account or user claim that leaves a
# limit out reads as 0 in the server, which means "none allowed" (no connection, no
# subscription, no payload): every limit is spelled out.
NO_LIMIT = -1


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def new_key(prefix):
    """A fresh key pair of one role (operator, account, user) from 32 random bytes."""
    seed = nkeys.encode_seed(os.urandom(32), prefix)
    return nkeys.from_seed(bytearray(seed))


def public(key):
    return key.public_key.decode("ascii")


def sign_jwt(issuer, subject, name, nats, expires=None):
    """A JWT for `subject` (a public key) signed by `issuer` (a key pair)."""
    claims = {
        "iat": int(time.time()),
        "iss": public(issuer),
        "sub": subject,
        "name": name,
        "nats": dict(nats, version=2),
    }
    if expires is not None:
        claims["exp"] = expires
    # jti: as nats-io/jwt's `ClaimsData.hash()` makes it, over the claims without it.
    digest = hashlib.new("sha512_256", json.dumps(claims, separators=(",", ":")).encode()).digest()
    claims["jti"] = base64.b32encode(digest).rstrip(b"=").decode("ascii")
    header = b64url(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}, separators=(",", ":")).encode())
    body = b64url(json.dumps(claims, separators=(",", ":")).encode())
    signing_input = header + "." + body
    return signing_input + "." + b64url(issuer.sign(signing_input.encode("ascii")))


def account_jwt(operator, account, name, jetstream):
    # JetStream is on for an account only when its limits allow storage (never for the
    # system account: the server refuses that); the rest are spelled out for the reason
    # at NO_LIMIT.
    limits = {
        "subs": NO_LIMIT, "data": NO_LIMIT, "payload": NO_LIMIT, "imports": NO_LIMIT,
        "exports": NO_LIMIT, "wildcards": True, "conn": NO_LIMIT, "leaf": NO_LIMIT,
    }
    if jetstream:
        limits.update({"mem_storage": NO_LIMIT, "disk_storage": NO_LIMIT, "streams": NO_LIMIT, "consumer": NO_LIMIT})
    return sign_jwt(operator, public(account), name, {"type": "account", "limits": limits})


def user_jwt(account, user, name, expires=None):
    nats = {"type": "user", "pub": {}, "sub": {}, "subs": NO_LIMIT, "data": NO_LIMIT, "payload": NO_LIMIT}
    return sign_jwt(account, public(user), name, nats, expires)


def creds(jwt, user):
    """The file `nsc generate creds` writes (the dash counts are nsc's own)."""
    seed = bytes(user.seed).decode("ascii")
    return (
        "-----BEGIN NATS USER JWT-----\n" + jwt + "\n------END NATS USER JWT------\n\n"
        "************************* IMPORTANT *************************\n"
        "NKEY Seed printed below can be used to sign and prove identity.\n"
        "NKEYs are sensitive and should be treated as secrets.\n\n"
        "-----BEGIN USER NKEY SEED-----\n" + seed + "\n------END USER NKEY SEED------\n\n"
        "*************************************************************\n"
    )


def write(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)


def main():
    if len(sys.argv) != 2:
        print("usage: make-nats-creds.py DIRECTORY", file=sys.stderr)
        return 64
    directory = sys.argv[1]
    operator = new_key(nkeys.PREFIX_BYTE_OPERATOR)
    account = new_key(nkeys.PREFIX_BYTE_ACCOUNT)
    stranger = new_key(nkeys.PREFIX_BYTE_ACCOUNT)  # never preloaded: the server does not know it
    # JetStream needs a system account in operator mode ("system account not setup"
    # otherwise); the operator JWT names it, as nsc's does.
    system = new_key(nkeys.PREFIX_BYTE_ACCOUNT)

    # The operator's JWT is self-signed (iss == sub), as nsc makes it.
    operator_jwt = sign_jwt(operator, public(operator), "LOGCAST-TEST",
                            {"type": "operator", "system_account": public(system)})
    write(directory, "server.conf",
          "operator: " + operator_jwt + "\n"
          "resolver: MEMORY\n"
          "resolver_preload: {\n"
          "  " + public(account) + ": " + account_jwt(operator, account, "LOGS", jetstream=True) + "\n"
          "  " + public(system) + ": " + account_jwt(operator, system, "SYS", jetstream=False) + "\n"
          "}\n")

    good, foreign, expired = (new_key(nkeys.PREFIX_BYTE_USER) for _ in range(3))
    write(directory, "good.creds", creds(user_jwt(account, good, "edge"), good))
    write(directory, "foreign.creds", creds(user_jwt(stranger, foreign, "stranger"), foreign))
    write(directory, "expired.creds", creds(user_jwt(account, expired, "late", int(time.time()) - 3600), expired))
    # The good user's JWT with another user's seed: the server's nonce check must fail.
    write(directory, "mismatched.creds", creds(user_jwt(account, good, "edge"), foreign))
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
