import os
import stat

SITE = "/app/site"


def mode(rel):
    return stat.S_IMODE(os.stat(os.path.join(SITE, rel)).st_mode)


def content(rel):
    with open(os.path.join(SITE, rel)) as f:
        return f.read()


def test_deploy_script():
    assert mode("bin/deploy.sh") == 0o750


def test_secrets():
    assert mode("secrets") == 0o700
    assert mode("secrets/key.txt") == 0o600


def test_public():
    assert mode("public/index.html") == 0o644
    assert mode("public/style.css") == 0o644


def test_contents_unchanged():
    assert content("bin/deploy.sh") == "#!/bin/sh\necho deploying\n"
    assert content("secrets/key.txt") == "sk-test-0000\n"
    assert content("public/index.html") == "<h1>hi</h1>\n"
    assert content("public/style.css") == "body { color: #333 }\n"
