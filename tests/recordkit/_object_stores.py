"""Local object-store servers for the tests: moto's S3 server and a GCS emulator, each
started on a free port of 127.0.0.1 for the session and stopped after.

Fake credentials and the endpoints are put in the environment for the session (the
clients' usual variables), so nothing can reach a real cloud: ``AWS_*`` for s3fs and
boto, ``STORAGE_EMULATOR_HOST`` for gcsfs. Each test gets its own fresh bucket.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import re
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import recordkit as rk

_FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclasses.dataclass(frozen=True)
class Bucket:
    """A fresh bucket on a local server: its URL and the storage options to reach it."""

    url: str
    storage_options: dict[str, Any]
    #: Environment variables that point a subprocess at the same server.
    env: dict[str, str]

    def join(self, *parts: str) -> str:
        return "/".join((self.url, *parts))


class ServerGets:
    """The GETs the local S3 server answers, by object name (the last part of its key),
    counted by the server: those of every process the test starts, not only its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: collections.Counter[str] = collections.Counter()

    def wrap(self, app: Callable[..., Any]) -> Callable[..., Any]:
        """The server's WSGI ``app``, counting the GETs it answers."""

        def counted(environ: dict[str, Any], start_response: Any) -> Any:
            if environ["REQUEST_METHOD"] == "GET":
                with self._lock:
                    self._counts[environ["PATH_INFO"].rsplit("/", 1)[-1]] += 1
            return app(environ, start_response)

        return counted

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()

    def of(self, name: str) -> int:
        """The GETs of the objects named ``name`` since the last :meth:`clear`."""
        with self._lock:
            return self._counts[name]

    def starting(self, prefix: str) -> int:
        """The GETs of the objects whose names start with ``prefix``."""
        with self._lock:
            return sum(n for name, n in self._counts.items() if name.startswith(prefix))


_S3_GETS = ServerGets()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """moto's S3 server on 127.0.0.1 (its endpoint URL), with fake AWS credentials."""
    pytest.importorskip("s3fs")
    server_module = pytest.importorskip("moto.server")
    saved = {key: os.environ.get(key) for key in _FAKE_AWS}
    os.environ.update(_FAKE_AWS)
    port = free_port()
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    # moto keeps its werkzeug server private; its app is looked up per request.
    server._server.app = _S3_GETS.wrap(server._server.app)  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def s3_bucket(s3_server: str) -> Bucket:
    """A new, empty bucket on the local S3 server."""
    import s3fs

    options = {"endpoint_url": s3_server, "key": "testing", "secret": "testing"}
    name = f"rk-{uuid.uuid4().hex[:12]}"
    s3fs.S3FileSystem(**options).mkdir(name)
    env = {**_FAKE_AWS, "AWS_ENDPOINT_URL": s3_server, "AWS_ENDPOINT_URL_S3": s3_server}
    return Bucket(f"s3://{name}", options, env)


@pytest.fixture
def s3_server_gets(s3_server: str) -> ServerGets:
    """The GETs the local S3 server answers during the test, from any process."""
    _S3_GETS.clear()
    return _S3_GETS


@pytest.fixture(scope="session")
def gcs_server() -> Iterator[str]:
    """The GCS emulator (gcp-storage-emulator, in memory) on 127.0.0.1: its endpoint.

    Run as its own process (it prints to stdout, which would mix with the output of the
    CLI under test), stopped after the session. gcsfs's experimental bucket-type probe
    (a gRPC call the emulator does not serve, which waits 60 s before falling back) is
    turned off by tests/conftest.py, before anything imports gcsfs.
    """
    pytest.importorskip("gcsfs")
    pytest.importorskip("gcp_storage_emulator")
    port = free_port()
    command = [sys.executable, "-m", "gcp_storage_emulator"]
    process = subprocess.Popen(
        [*command, "start", "--host", "127.0.0.1", "--port", str(port), "--in-memory", "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        _wait_for(port, process)
        saved = os.environ.get("STORAGE_EMULATOR_HOST")
        os.environ["STORAGE_EMULATOR_HOST"] = endpoint
        yield endpoint
    finally:
        process.terminate()
        process.wait(timeout=10)
    if saved is None:
        os.environ.pop("STORAGE_EMULATOR_HOST", None)
    else:
        os.environ["STORAGE_EMULATOR_HOST"] = saved


def _wait_for(port: int, process: subprocess.Popen[bytes]) -> None:
    """Until something listens on ``port`` (the server process started), or fail."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the GCS emulator exited with status {process.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    pytest.fail("the GCS emulator did not start within 30 s")


@pytest.fixture
def gcs_bucket(gcs_server: str) -> Bucket:
    """A new, empty bucket on the GCS emulator."""
    import gcsfs

    options = {"endpoint_url": gcs_server, "token": "anon", "project": "test"}
    name = f"rk-{uuid.uuid4().hex[:12]}"
    gcsfs.GCSFileSystem(**options).mkdir(name)
    env = {"STORAGE_EMULATOR_HOST": gcs_server, "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false"}
    return Bucket(f"gs://{name}", options, env)


@pytest.fixture(params=["s3", "gs"])
def bucket(request: pytest.FixtureRequest) -> Bucket:
    """A fresh bucket on each local server in turn (S3, then GCS)."""
    return request.getfixturevalue("s3_bucket" if request.param == "s3" else "gcs_bucket")  # type: ignore[no-any-return]


# -- a small dataset for the remote tests of every layer -------------------------------------

#: The schema of the remote tests' records (text, scalar and tensor fields).
REMOTE_SCHEMA = rk.Schema(
    name="remote-test",
    fields={
        "name": rk.FieldSpec(codec="text"),
        "label": rk.FieldSpec(codec="scalar"),
        "values": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [3]}),
    },
)


def remote_records(count: int, start: int = 0) -> list[dict[str, Any]]:
    """Records ``item-<start>`` .. ``item-<start+count-1>``."""
    return [
        {"name": f"item-{i}", "label": i % 10, "values": np.full(3, i, dtype=np.float32)}
        for i in range(start, start + count)
    ]


def run_shard_names(files: list[str]) -> list[str]:
    """The names of shards written to a bucket, each one's run token taken out
    (``train-00000.5f0c9a1e.tfrecord[.index]`` -> ``train-00000.tfrecord[.index]``); an
    AssertionError if a shard's name carries none. Other names are kept as they are."""
    shard = re.compile(r"^(.*-\d{5,})(\.[0-9a-f]{8})?(\.tfrecord.*)$")
    plain = []
    for file in files:
        match = shard.match(file)
        if match is None:
            plain.append(file)
            continue
        assert match.group(2) is not None, f"shard {file} has no run token"
        plain.append(match.group(1) + match.group(3))
    return plain


def cli_options(bucket: Bucket) -> list[str]:
    """``--storage-option`` arguments that reach ``bucket``."""
    return [f"--storage-option={key}={value}" for key, value in bucket.storage_options.items()]
