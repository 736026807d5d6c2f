"""kbreview.broker: the filesystem broker never hands a worker a message file that is not yet whole, and an
unreadable file is skipped, not fatal (a worker killed mid-write, or a file left by kombu's own writer)."""
import json
import os

import pytest
from kombu import Connection

from kbreview.broker import Transport


@pytest.fixture
def channel(tmp_path):
    folder = tmp_path / "messages"
    folder.mkdir()
    options = {"data_folder_in": str(folder), "data_folder_out": str(folder), "control_folder": str(tmp_path / "control")}
    with Connection("filesystem://", transport=Transport, transport_options=options) as connection:
        yield connection.default_channel, folder


def test_a_message_appears_under_its_queue_name_only_when_whole(channel):
    chan, folder = channel
    chan._put("detect", {"body": "x" * 10_000})
    [name] = os.listdir(folder)
    assert name.endswith(".detect.msg") and not name.startswith(".")
    assert json.loads((folder / name).read_text())["body"] == "x" * 10_000
    # A file still being written lies under a hidden name that the reader never matches.
    (folder / f".{name[:-4]}-2.detect.msg.part").write_text("")
    assert chan._get("detect")["body"] == "x" * 10_000
    from queue import Empty
    with pytest.raises(Empty):
        chan._get("detect")


def test_an_unreadable_message_file_is_skipped_and_the_next_one_delivered(channel, caplog):
    chan, folder = channel
    # What a worker killed mid-write leaves behind, named to sort (and so be read) before the message sent after it.
    (folder / f"{0:015d}_aaaa.detect.msg").write_text("")
    chan._put("detect", {"turn": 7})
    assert chan._get("detect") == {"turn": 7}
    assert "unreadable message file" in caplog.text
    assert os.listdir(folder) == []


def test_messages_are_read_in_the_order_they_were_sent(channel, monkeypatch):
    chan, _ = channel
    clock = iter([9.999, 10.0])  # 9999 ms then 10000 ms: unpadded, "10000_" would sort first
    monkeypatch.setattr("kbreview.broker.monotonic", lambda: next(clock))
    chan._put("detect", {"turn": 1})
    chan._put("detect", {"turn": 2})
    assert [chan._get("detect")["turn"], chan._get("detect")["turn"]] == [1, 2]
