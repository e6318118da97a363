import os
import tarfile

LOGS = {
    "logs/app.log": b"INFO start\nINFO stop\n",
    "logs/old/app.1.log": b"INFO older\n",
    "db/migrate.log": b"migrated 3\n",
}


def test_restored():
    with tarfile.open("/app/backup.tar.gz") as tf:
        for m in tf.getmembers():
            if m.isfile():
                path = os.path.join("/app/restored", m.name)
                assert os.path.isfile(path), f"{path} is missing"
                with open(path, "rb") as f:
                    assert f.read() == tf.extractfile(m).read()


def test_logs_archive():
    with open("/app/logs.tar.gz", "rb") as f:
        assert f.read(2) == b"\x1f\x8b", "logs.tar.gz is not gzip-compressed"
    with tarfile.open("/app/logs.tar.gz", "r:gz") as tf:
        files = {os.path.normpath(m.name): tf.extractfile(m).read() for m in tf.getmembers() if m.isfile()}
    assert files == LOGS
