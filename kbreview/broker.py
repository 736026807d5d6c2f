"""The filesystem broker (no REDIS_URL) with whole message files.

kombu's filesystem transport writes a message file in place, under its final name: a worker polling the folder can
take a file that is created but not yet written, read nothing and stop consuming on the empty JSON (seen when a worker
was killed and another started while beat and the sweeper were sending). Here a message is written under a hidden
name beside the queue's files and renamed into place once complete (a rename is atomic within one folder), and a
file that still cannot be decoded is logged and skipped instead of stopping the worker: the work it announced is a
database row, which the sweeper sends again.
"""
from __future__ import annotations

import logging
import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

log = logging.getLogger(__name__)


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        # Zero-padded: the reader takes files in name order, so a longer number must not sort before a shorter one.
        name = f"{int(round(monotonic() * 1000)):015d}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        # A leading dot: the reader matches files by what follows their first dot, so it never takes this one.
        partial = os.path.join(self.data_folder_out, f".{name}.part")
        try:
            with open(partial, "wb") as handle:
                handle.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            try:
                os.unlink(partial)
            except OSError:
                pass
            raise ChannelError(f"Cannot add a message to {self.data_folder_out!r}") from exc

    def _get(self, queue):
        while True:  # each attempt takes one file off the queue, so this ends in a message or Empty
            try:
                return super()._get(queue)
            except ValueError as exc:  # json.JSONDecodeError
                log.warning("skipped an unreadable message file on queue %s: %s", queue, exc)


class Transport(filesystem.Transport):
    Channel = Channel
