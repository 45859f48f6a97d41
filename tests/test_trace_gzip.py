"""Gzip-compressed traces (``.json.gz``, issue #23 point 3): a long run's trace is tens of MB of JSON
and the public server takes 5 MB a file, so the app offers a large trace compressed, the CLI writes
one for ``--out x.json.gz``, and every reader takes one. Decompression is bounded: the upload cap
counts the compressed bytes, the JSON a replay decompresses has its own cap (all its files together),
a gzip bomb is refused with a sentence naming that cap after inflating no more than it, and a truncated
or damaged file gets a sentence, never a traceback."""

from __future__ import annotations

import functools
import gzip
import html
import os
import tracemalloc
import zlib

import pytest
from tiny import tiny_pair

import specviz
from specviz import trace_io
from specviz.bench.replay import tiled
from specviz.trace import RunTrace
from specviz.ui import AppConfig, Explorer, Session, runner, trace_files
from specviz.ui.pairs import PairChoice, PairRegistry

MB = 2**20


@functools.lru_cache(maxsize=None)
def base_trace() -> RunTrace:
    return specviz.decode(
        tiny_pair("llama", vocab=16, draft="noisy", noise=0.5),
        "sd",
        [1, 2, 3],
        max_new_tokens=40,
        temperature=1.0,
        seed=3,
        gamma=4,
    )


@functools.lru_cache(maxsize=None)
def long_json() -> str:
    """A coherent trace of 1,000 steps: more than ``trace_io.COMPRESS_OVER`` of JSON."""
    text = tiled(base_trace(), 1000).to_json()
    assert len(text) > trace_io.COMPRESS_OVER
    return text


def explorer(**limits) -> Explorer:
    return Explorer(
        AppConfig(**limits), registry=PairRegistry(), presets=[PairChoice("none", "/nonexistent", None)], preload=False
    )


def public_explorer() -> Explorer:
    return explorer(
        **{
            k: getattr(AppConfig.public_defaults(), k)
            for k in ("public", "max_upload_bytes", "max_replay_json_bytes", "max_columns")
        }
    )


def status(view: dict) -> str:
    return html.unescape(view["status"])


def bomb(path, unpacked: int = 200 * MB) -> int:
    """``unpacked`` zero bytes gzip-compressed into ``path`` (about a thousandth of it), written in
    chunks so the test itself never holds them; returns the file's size."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b"0" * MB
    with open(path, "wb") as fh:
        for _ in range(unpacked // MB):
            fh.write(comp.compress(chunk))
        fh.write(comp.flush())
    return os.path.getsize(path)


# ---- save and load ---------------------------------------------------------------------------------------
def test_json_gz_round_trip(tmp_path):
    trace = base_trace()
    path = trace_io.save_trace(trace, tmp_path / "t.json.gz")
    with open(path, "rb") as fh:
        assert fh.read(2) == trace_io.GZIP_MAGIC
    assert gzip.decompress(open(path, "rb").read()).decode() == trace.to_json()
    again = trace_io.load_trace(path)
    assert again.to_json() == trace.to_json() and again == RunTrace.from_json(trace.to_json())
    # the same trace gives the same bytes (no time or name in the header); plain .json stays plain
    assert trace_io.encode(trace.to_json(), True) == open(path, "rb").read()
    plain = trace_io.save_trace(trace, tmp_path / "t.json")
    assert open(plain, encoding="utf-8").read() == trace.to_json()
    assert trace_io.load_trace(plain).to_json() == trace.to_json()
    # read by content: a gzip file named .json reads too; a .gz name over plain JSON is refused in words
    os.replace(path, tmp_path / "renamed.json")
    assert trace_io.load_trace(tmp_path / "renamed.json").to_json() == trace.to_json()
    (tmp_path / "plain.json.gz").write_text(trace.to_json())
    with pytest.raises(specviz.TraceFormatError, match="named .gz but is not gzip-compressed"):
        trace_io.load_trace(tmp_path / "plain.json.gz")


def test_a_long_trace_shrinks_and_reads_back(tmp_path):
    text = long_json()
    data, suffix = trace_io.for_download(text)
    assert suffix == ".json.gz" and len(data) * 5 < len(text)
    (tmp_path / "long.json.gz").write_bytes(data)
    assert trace_io.read_trace_text(tmp_path / "long.json.gz") == text
    small, suffix = trace_io.for_download(base_trace().to_json())
    assert suffix == ".json" and small.decode() == base_trace().to_json()


def test_the_cli_writes_gzip_for_out_json_gz(tmp_path):
    from specviz.cli import write_trace

    write_trace(base_trace(), str(tmp_path / "t.json.gz"))
    write_trace(base_trace(), str(tmp_path / "t.json"))
    assert gzip.decompress((tmp_path / "t.json.gz").read_bytes()).decode() == base_trace().to_json()
    assert (tmp_path / "t.json").read_text() == base_trace().to_json()
    with pytest.raises(specviz.SpecvizError, match="--out .*could not write the trace"):
        write_trace(base_trace(), str(tmp_path / "missing" / "t.json.gz"))


# ---- the app's export --------------------------------------------------------------------------------------
def test_the_download_of_a_long_run_is_gzip_and_replays(tmp_path):
    long = RunTrace.from_json(long_json())
    col = runner.columns_from_traces([long])[0]
    path = trace_files.export(col, str(tmp_path / "exports"))
    assert path.endswith(".json.gz") and col.path == path
    assert os.path.getsize(path) * 5 < len(long_json())
    assert gzip.decompress(open(path, "rb").read()).decode() == long_json()
    small = runner.columns_from_traces([base_trace()])[0]
    assert trace_files.export(small, str(tmp_path / "exports")).endswith(".json")  # small: readable as it is
    # the export's file is what the upload takes back, whole, on a public server
    ex, session = public_explorer(), Session()
    assert os.path.getsize(path) <= ex.config.max_upload_bytes
    view = ex.upload([path], session)
    assert session.columns and session.columns[0].n_steps == 1000, status(view)
    assert session.columns[0].trace.output_ids == long.output_ids
    # the replay's own download is the uploaded .json.gz, byte for byte, named as one
    assert session.columns[0].path.endswith(".json.gz")
    assert open(session.columns[0].path, "rb").read() == open(path, "rb").read()


def test_the_upload_accepts_json_gz_within_limits(tmp_path):
    trace = base_trace()
    gz, plain = trace_io.save_trace(trace, tmp_path / "a.json.gz"), trace_io.save_trace(trace, tmp_path / "b.json")
    ex, session = public_explorer(), Session()
    view = ex.upload([gz, plain], session)
    assert len(session.columns) == 2, status(view)
    assert "Could not replay" not in status(view) and "skipped" not in status(view)
    assert [c.trace.output_ids for c in session.columns] == [trace.output_ids] * 2


def test_the_upload_component_takes_json_gz():
    from gradio_client.utils import is_valid_file

    demo = explorer().build()
    upload = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "sv-upload")
    assert is_valid_file("/tmp/x/specviz-sd.json.gz", upload.file_types)
    assert is_valid_file("/tmp/x/specviz-sd.json", upload.file_types)
    assert ".json.gz" in upload.label


# ---- the limits ----------------------------------------------------------------------------------------------
def test_a_gzip_bomb_is_refused_naming_the_limit_and_the_app_keeps_serving(tmp_path):
    path = tmp_path / "bomb.json.gz"
    size = bomb(path)  # 200 MB of zeros
    assert size < 1 * MB
    ex, session = public_explorer(), Session()
    cap = ex.config.max_replay_json_bytes
    view = ex.upload([str(path)], session)
    said = status(view)
    assert "Could not replay" in said and "bomb.json.gz" in said
    assert f"more than {cap // MB} MB of JSON once decompressed" in said
    assert f"at most {cap // MB} MB of trace JSON in one replay" in said
    assert "Traceback" not in said and session.columns == []
    # the same explorer and session still replay a good file
    good = trace_io.save_trace(base_trace(), tmp_path / "good.json.gz")
    view = ex.upload([good], session)
    assert len(session.columns) == 1, status(view)


def test_decompression_stops_at_the_limit(tmp_path):
    """Memory follows the limit, not the bomb's 200 MB: the inflater reads in bounded chunks (what was
    read, the piece being added and the buffer's growth: within twice the limit and a few chunks)."""
    path = tmp_path / "bomb.json.gz"
    bomb(path)
    limit = 4 * MB
    tracemalloc.start()
    try:
        with pytest.raises(specviz.TraceFormatError, match="more than 4 MB of JSON once decompressed"):
            trace_io.read_trace_text(path, max_bytes=5 * MB, max_json_bytes=limit)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * limit + 3 * trace_io.CHUNK, peak


def test_the_upload_cap_counts_compressed_bytes(tmp_path):
    path = tmp_path / "big.json.gz"
    path.write_bytes(os.urandom(2048))  # incompressible, over the cap as sent
    view = explorer(max_upload_bytes=1024).upload([str(path)], Session())
    assert "accepts traces up to" in status(view) and "a .json.gz counted compressed" in status(view)


def test_one_replays_files_share_the_json_cap(tmp_path):
    trace = base_trace()
    n = len(trace.to_json())
    paths = [trace_io.save_trace(trace, tmp_path / f"{i}.json.gz") for i in range(3)]
    session = Session()
    view = explorer(max_replay_json_bytes=2 * n + n // 2).upload(paths, session)
    said = status(view)
    assert len(session.columns) == 2, said  # the third would pass the cap
    assert "2.json.gz" in said and "the files before it hold" in said


def test_the_config_carries_the_json_cap():
    assert AppConfig.public_defaults().max_replay_json_bytes == 48 * MB
    assert AppConfig.public_defaults().max_upload_bytes == 12 * MB  # a 12,000-step trace gzipped: 8-10 MB
    assert AppConfig().max_replay_json_bytes == 256 * MB
    assert AppConfig.from_env({"SPECVIZ_PUBLIC": "1"}).max_replay_json_bytes == 48 * MB
    cfg = AppConfig.from_env({"SPECVIZ_PUBLIC": "1", "SPECVIZ_MAX_REPLAY_JSON_MB": "100"})
    assert cfg.max_replay_json_bytes == 100 * MB


# ---- damaged files ---------------------------------------------------------------------------------------------
def damaged(tmp_path) -> dict[str, bytes]:
    data = trace_io.encode(base_trace().to_json(), True)
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF
    crc = bytearray(data)
    crc[-8] ^= 0xFF  # the CRC-32 of the trailer
    return {
        "truncated": data[: len(data) // 2],
        "header only": data[:10],
        "damaged": bytes(flipped),
        "crc": bytes(crc),
        "not json": gzip.compress(b"\xff\xfe\x00garbage", mtime=0),
        "trailing junk": data + b"junk junk junk",
    }


@pytest.mark.parametrize(
    "kind, expected",
    [
        ("truncated", "is a truncated gzip file"),
        ("header only", "is a truncated gzip file"),
        ("damaged", "gzip file"),
        ("crc", "is a damaged gzip file"),
        ("not json", "does not hold a text (UTF-8 JSON) file"),
        ("trailing junk", "is a damaged gzip file"),
    ],
)
def test_a_damaged_gzip_gets_a_sentence(tmp_path, kind, expected):
    path = tmp_path / "t.json.gz"
    path.write_bytes(damaged(tmp_path)[kind])
    session = Session()
    said = status(public_explorer().upload([str(path)], session))
    assert "Could not replay" in said and "t.json.gz" in said and expected in said, said
    assert "Traceback" not in said and session.columns == []
    with pytest.raises(specviz.TraceFormatError):
        trace_io.load_trace(path)


# ---- a real public server ------------------------------------------------------------------------------------
@pytest.mark.e2e
@pytest.mark.slow
def test_a_public_server_refuses_a_gzip_bomb_and_keeps_replaying(tmp_path):
    """Through Gradio's upload route and the replay event, as a client sends them: the page's file
    types take a ``.json.gz``, a gzip bomb gets the sentence and the server replays the next file."""
    import json

    from e2e_support import HAVE_BUNDLED, start_app, stop
    from gradio_client import Client, handle_file
    from test_ui_support import save_tiny_pair

    bomb(tmp_path / "bomb.json.gz")
    good = trace_io.save_trace(base_trace(), tmp_path / "good.json.gz")
    pair = {} if HAVE_BUNDLED else dict(zip(("SPECVIZ_TARGET", "SPECVIZ_DRAFT"), save_tiny_pair(tmp_path / "pair")))
    proc, url, log = start_app(tmp_path, SPECVIZ_PUBLIC="1", **pair)
    try:
        client = Client(url, verbose=False)
        said = html.unescape(
            json.dumps(
                client.predict([handle_file(str(tmp_path / "bomb.json.gz"))], api_name="/replay"), ensure_ascii=False
            )
        )
        assert "Could not replay" in said and "more than 48 MB of JSON once decompressed" in said, said[:2000]
        said = html.unescape(json.dumps(client.predict([handle_file(good)], api_name="/replay"), ensure_ascii=False))
        assert "Replaying 1" in said and "Could not replay" not in said, said[:2000]
        assert proc.poll() is None
    finally:
        stop(proc)
    assert "Traceback" not in log.read_text()
