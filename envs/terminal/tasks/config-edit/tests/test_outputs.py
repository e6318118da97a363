import configparser

ORIGINAL = """; Application settings
[server]
host = 0.0.0.0
port = 8080
; debug must be off in production
debug = true
workers = 4

[database]
; the primary database
url = postgres://db.internal:5432/app
timeout = 30

[cache]
port = 6379
debug = true
"""


def load():
    c = configparser.ConfigParser(inline_comment_prefixes=None)
    c.read("/app/app.ini")
    return c


def test_server_values():
    c = load()
    assert c["server"]["port"] == "9090"
    assert c["server"]["debug"] == "false"


def test_database_pool_size():
    assert load()["database"]["pool_size"] == "20"


def test_other_lines_kept():
    with open("/app/app.ini") as f:
        got = f.read().splitlines()
    # Every original line but [server]'s port and debug, in order.
    want = [l for i, l in enumerate(ORIGINAL.splitlines()) if i not in (3, 5)]
    kept = [l for l in got if l not in ("port = 9090", "debug = false", "pool_size = 20")]
    assert kept == want
