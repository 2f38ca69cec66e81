"""Frames and request validation, without a worker."""

from __future__ import annotations

import io
import struct

import numpy as np
import pytest

from pgrecall.worker import protocol
from pgrecall.worker.protocol import ProtocolError


def _reader(data: bytes) -> io.BytesIO:
    return io.BytesIO(data)


def test_frame_round_trip() -> None:
    raw = protocol.encode_frame({"op": "status", "x": "é"}, b"\x00\x01")
    frame = protocol.read_frame(_reader(raw).read)
    assert frame is not None
    assert frame.header == {"op": "status", "x": "é"}
    assert frame.body == b"\x00\x01"


def test_clean_end_of_stream_is_none_and_truncation_is_an_error() -> None:
    assert protocol.read_frame(_reader(b"").read) is None
    raw = protocol.encode_frame({"op": "status"})
    with pytest.raises(protocol.PeerClosedError):
        protocol.read_frame(_reader(raw[:-2]).read)


def test_oversized_lengths_are_refused_before_reading() -> None:
    huge = struct.pack(">4sII", protocol.MAGIC, protocol.MAX_HEADER_BYTES + 1, 0)
    with pytest.raises(ProtocolError, match="exceeds"):
        protocol.read_frame(_reader(huge).read)
    huge_body = struct.pack(">4sII", protocol.MAGIC, 2, protocol.MAX_BODY_BYTES + 1) + b"{}"
    with pytest.raises(ProtocolError, match="exceeds"):
        protocol.read_frame(_reader(huge_body).read)


@pytest.mark.parametrize(
    "payload",
    [
        b"GARBAGE!" + b"\x00" * 8,
        struct.pack(">4sII", protocol.MAGIC, 3, 0) + b"\xff\xfe\xfd",
        struct.pack(">4sII", protocol.MAGIC, 2, 0) + b"[]",
    ],
)
def test_malformed_frames_are_refused(payload: bytes) -> None:
    with pytest.raises(ProtocolError):
        protocol.read_frame(_reader(payload).read)


@pytest.mark.parametrize(
    "header",
    [
        {},
        {"op": "pickle"},
        {"op": "queries"},
        {"op": "queries", "texts": "not a list"},
        {"op": "queries", "texts": [1, 2]},
        {"op": "queries", "texts": ["x"] * (protocol.MAX_TEXTS + 1)},
        {"op": "passages", "texts": ["x"], "model": 3},
        {"op": "detect", "texts": ["x"], "codes": ["english"]},
        {"op": "detect", "texts": ["x"], "codes": ["en"], "thresholds": {"min_letters": True}},
        {"op": "detect", "texts": ["x"], "codes": ["en"], "thresholds": {"min_confidence": 2}},
        {"op": "detect", "texts": ["x"], "codes": ["en"], "thresholds": {"surprise": 1}},
        {"op": "warm", "what": ["everything"]},
    ],
)
def test_bad_requests_are_refused(header: dict[str, object]) -> None:
    with pytest.raises(ProtocolError):
        protocol.check_request(header)


def test_vectors_round_trip_and_are_checked() -> None:
    matrix = np.arange(12, dtype=np.float32).reshape(3, 4)
    fields, body = protocol.encode_vectors(matrix)
    assert np.array_equal(protocol.decode_vectors(fields, body), matrix)
    with pytest.raises(ProtocolError):
        protocol.decode_vectors(fields, body[:-4])
    with pytest.raises(ProtocolError):
        protocol.decode_vectors({**fields, "n": True}, body)


def test_codes_are_normalized() -> None:
    assert protocol.check_codes(["fr", "EN", "fr"]) == ("en", "fr")
