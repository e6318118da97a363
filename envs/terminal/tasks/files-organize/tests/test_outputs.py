import os

INBOX = "/app/inbox"
EXPECTED = {
    "txt/todo.txt": "buy milk\n",
    "txt/notes.txt": "meeting at 10\n",
    "csv/people.csv": "id,name\n1,ada\n",
    "csv/orders.csv": "id,total\n1,9.50\n",
    "log/server.log": "2024-01-01 started\n",
    "other/README": "Read me first.\n",
    "json/config.json": '{"a": 1}\n',
}


def test_files_sorted_by_extension():
    for rel, content in EXPECTED.items():
        path = os.path.join(INBOX, rel)
        assert os.path.isfile(path), f"{path} is missing"
        with open(path) as f:
            assert f.read() == content, f"{path} changed"


def test_no_files_left_in_inbox():
    left = [n for n in os.listdir(INBOX) if os.path.isfile(os.path.join(INBOX, n))]
    assert left == [], f"files left directly in {INBOX}: {left}"
