#!/usr/bin/env python3
"""Writes the seed corpus of the network proxy's fuzz targets (README.md, "Corpus"):
corpus/fuzz_netproxy_{sni,socks,target,dns}/, a file per seed, named by what it is.
Seeds are built from the wire formats (RFC 8446/6066, RFC 1928, RFC 1035/6891) so that
the fuzzer starts past the first length checks. Rerun after changing it; the output is
committed. A crash input kept in those folders (crash-*) is left alone.
  tests/fuzz/make_netproxy_corpus.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def u16(n):
    return struct.pack(">H", n)


def vec8(b):
    return bytes([len(b)]) + b


def vec16(b):
    return u16(len(b)) + b


# --- TLS ClientHello (fuzz_netproxy_sni) -------------------------------------------
def extension(kind, body):
    return u16(kind) + vec16(body)


def server_name(*entries):
    return extension(0, vec16(b"".join(bytes([t]) + vec16(n) for t, n in entries)))


def client_hello(extensions, with_extensions=True):
    body = b"\x03\x03" + bytes(range(32)) + vec8(bytes(32)) + vec16(b"\x13\x01\x13\x02\xc0\x2f")
    body += vec8(b"\x00")
    if with_extensions:
        body += vec16(b"".join(extensions))
    return b"\x01" + struct.pack(">I", len(body))[1:] + body


def records(handshake, fragment=16384):
    out = b""
    for i in range(0, len(handshake), fragment):
        part = handshake[i:i + fragment]
        out += b"\x16\x03\x01" + vec16(part)
    return out


SUPPORTED_GROUPS = extension(0x000A, vec16(b"\x00\x1d\x00\x17"))
VERSIONS = extension(0x002B, vec8(b"\x03\x04\x03\x03"))
KEY_SHARE = extension(0x0033, vec16(u16(0x1D) + vec16(bytes(32))))
ALPN = extension(0x0010, vec16(vec8(b"h2") + vec8(b"http/1.1")))


def sni_seeds():
    full = client_hello([SUPPORTED_GROUPS, server_name((0, b"example.com")), VERSIONS, KEY_SHARE, ALPN])
    return {
        "sni-example-com": records(full),
        "sni-upper-trailing-dot": records(client_hello([server_name((0, b"PyPI.Org."))])),
        "sni-split-records": records(client_hello([server_name((0, b"split.example.com"))]), 40),
        "sni-long-name": records(client_hello([server_name((0, b".".join([b"a" * 63] * 3) + b".co"))])),
        "sni-underscore": records(client_hello([server_name((0, b"_dmarc.example.org"))])),
        "no-sni": records(client_hello([SUPPORTED_GROUPS, VERSIONS])),
        "no-extensions": records(client_hello([], with_extensions=False)),
        "sni-other-type-only": records(client_hello([server_name((7, b"x"))])),
        "truncated": records(full)[:60],
        "truncated-record-header": records(full)[:3],
        "sni-empty-label": records(client_hello([server_name((0, b"a..com"))])),
        "sni-leading-dot": records(client_hello([server_name((0, b".clit.example.com"))])),
        "two-host-names": records(client_hello([server_name((0, b"a.com"), (0, b"b.com"))])),
        "server-hello": records(b"\x02" + client_hello([server_name((0, b"a.com"))])[1:]),
        "then-change-cipher-spec": records(full) + b"\x14\x03\x03\x00\x01\x01",
        "http": b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n",
    }


# --- SOCKS5 (fuzz_netproxy_socks): greeting, then request, as one session sends them ---
GREETING = b"\x05\x01\x00"


def request(command, kind, address, port):
    return bytes([5, command, 0, kind]) + address + u16(port)


def socks_seeds():
    v4 = request(1, 1, bytes([93, 184, 216, 34]), 443)
    v6 = request(1, 4, bytes.fromhex("20010db8000000000000000000000001"), 80)
    domain = request(1, 3, vec8(b"example.com"), 443)
    return {
        "ipv4": GREETING + v4,
        "ipv6": GREETING + v6,
        "ipv4-mapped-ipv6": GREETING + request(1, 4, bytes(10) + b"\xff\xff" + bytes([1, 2, 3, 4]), 80),
        "domain": GREETING + domain,
        "domain-max-length": GREETING + request(1, 3, vec8(b"a" * 255), 8080),
        "greeting-two-methods": b"\x05\x02\x02\x00" + domain,
        "greeting-auth-only": b"\x05\x01\x02",
        "bind": GREETING + request(2, 1, bytes(4), 0),
        "udp-associate": GREETING + request(3, 1, bytes([127, 0, 0, 1]), 53),
        "unknown-address-type": GREETING + bytes([5, 1, 0, 9]),
        "request-alone": domain,
        "truncated-domain": GREETING + domain[:9],
        "socks4": b"\x04\x01\x01\xbb\x5d\xb8\xd8\x22user\x00",
    }


# --- proxy targets (fuzz_netproxy_target): first byte 0 CONNECT, 1 with a default port,
# 2 absolute-form URI --------------------------------------------------------------------
def target_seeds():
    connect = {
        "example.com:443": b"example.com:443",
        "v6-loopback": b"[::1]:80",
        "v6-no-port": b"[2001:db8::1]",
        "no-port": b"example.com",
        "userinfo": b"user@example.com:443",
        "v6-without-brackets": b"::1:80",
        "empty-label": b"a..com:443",
        "trailing-dot": b"Example.COM.:8443",
        "ipv4": b"93.184.216.34:443",
        "port-zero": b"example.com:0",
        "port-too-big": b"example.com:65536",
    }
    uris = {
        "http-a-b-c": b"http://a.b/c",
        "http-port-query": b"http://example.com:8080/path?q=1#frag",
        "http-query-only": b"HTTP://example.com?x",
        "http-v6": b"http://[::1]:8080/",
        "https": b"https://example.com/",
        "origin-form": b"/index.html",
        "http-userinfo": b"http://u:p@example.com/",
    }
    seeds = {}
    for name, text in connect.items():
        seeds["connect-" + name] = b"\x00" + text
        seeds["default-" + name] = b"\x01" + text
    for name, text in uris.items():
        seeds["uri-" + name] = b"\x02" + text
    return seeds


# --- DNS queries (fuzz_netproxy_dns) ------------------------------------------------------
def qname(name):
    return b"".join(vec8(label.encode()) for label in name.split(".") if label) + b"\x00"


def query(name, qtype, qid=0x1234, flags=0x0100, qclass=1, additional=b"", arcount=0, extra_questions=b"",
          qdcount=1):
    header = struct.pack(">HHHHHH", qid, flags, qdcount, 0, 0, arcount)
    return header + qname(name) + u16(qtype) + u16(qclass) + extra_questions + additional


OPT = b"\x00" + u16(41) + u16(1232) + b"\x00\x00\x00\x00" + vec16(b"")  # EDNS0, 1232-byte UDP


def dns_seeds():
    # A second question whose name points back at the first (offset 12): compression.
    pointer_question = b"\xc0\x0c" + u16(28) + u16(1)
    # A name that is "www" followed by a pointer to the first question's name.
    www_pointer = vec8(b"www") + b"\xc0\x0c" + u16(1) + u16(1)
    return {
        "a-example-com": query("example.com", 1),
        "aaaa-example-com": query("example.com", 28),
        "a-edns": query("pypi.org", 1, additional=OPT, arcount=1),
        "a-mixed-case": query("PyPI.Org", 1),
        "root": query("", 2),
        "two-questions-compressed": query("example.com", 1, qdcount=2, extra_questions=pointer_question),
        "compressed-prefix": query("example.com", 1, qdcount=2, extra_questions=www_pointer),
        "no-question": struct.pack(">HHHHHH", 7, 0x0100, 0, 0, 0, 0),
        "class-chaos": query("version.bind", 16, qclass=3),
        "opcode-status": query("example.com", 1, flags=0x1000),
        "response": query("example.com", 1, flags=0x8180),
        "txt-any": query("a.b.c.d.example.net", 255),
        "odd-byte-label": struct.pack(">HHHHHH", 9, 0x0100, 1, 0, 0, 0) + b"\x03a\x00b\x03com\x00" + u16(1) + u16(1),
        # A label with a dot in it (ldns writes it versio\.), a name the policy must refuse.
        "label-with-dot": struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0) + b"\x07versio.\x00" + u16(16) + u16(3),
        "pointer-loop": struct.pack(">HHHHHH", 9, 0x0100, 1, 0, 0, 0) + b"\xc0\x0c" + u16(1) + u16(1),
    }


def main():
    for target, seeds in (("fuzz_netproxy_sni", sni_seeds()), ("fuzz_netproxy_socks", socks_seeds()),
                          ("fuzz_netproxy_target", target_seeds()), ("fuzz_netproxy_dns", dns_seeds())):
        folder = os.path.join(HERE, "corpus", target)
        os.makedirs(folder, exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)
        print(f"{target}: {len(seeds)} seeds in {os.path.relpath(folder, HERE)}")


if __name__ == "__main__":
    main()
