"""access.py against hand-counted figures: sectors, L1 bank passes, lanes on one address."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pypto.backend.cost_model.access import AccessGeometry, access_stats

G = AccessGeometry(warp_size=32, sector_bytes=32, l1_banks=32, l1_bank_bytes=4)


def stat(kind, offsets, mask=None, block_lanes=None, elem=4):
    offsets = np.asarray(offsets, dtype=np.int64)
    return access_stats(kind, offsets, mask, offsets.size, block_lanes or offsets.size, elem,
                        G).tolist()


def test_sectors_of_contiguous_strided_and_broadcast_lanes():
    lanes = np.arange(64)
    assert stat("sectors", lanes) == [8]              # 2 warps x 128 B = 4 sectors each
    assert stat("sectors", lanes * 2) == [16]         # stride 2 floats: 8 sectors per warp
    assert stat("sectors", lanes * 8) == [64]         # stride 32 B: a sector per lane
    assert stat("sectors", lanes * 1000) == [64]      # scattered: a sector per lane
    assert stat("sectors", np.zeros(64)) == [2]       # one address: one sector per warp
    assert stat("sectors", lanes, elem=2) == [4]      # half precision: 64 B per warp
    assert stat("sectors", lanes[::-1]) == [8]        # order within a warp does not matter


def test_sectors_count_only_active_lanes_per_block():
    lanes = np.arange(128)
    mask = lanes < 40                                  # block 0: 32 + 8 lanes, block 1: none
    assert stat("sectors", lanes, mask, block_lanes=64) == [4 + 1, 0]


def test_bank_passes_conflict_free_broadcast_and_strided():
    tid = np.arange(32)
    assert stat("banks", tid) == [1]                  # 32 words in 32 banks
    assert stat("banks", np.zeros(32)) == [1]         # one word: a broadcast
    assert stat("banks", tid * 2) == [2]              # two words per even bank
    assert stat("banks", tid * 32) == [32]            # every lane in bank 0
    assert stat("banks", tid * 33) == [1]             # the padded-pitch trick
    assert stat("banks", np.arange(64)) == [2]        # two warps, one pass each


def test_lanes_on_one_address():
    assert stat("same", np.zeros(256)) == [256]
    assert stat("same", np.arange(256) % 4) == [64]
    assert stat("same", np.arange(256)) == [1]
    assert stat("same", np.zeros(256), np.arange(256) < 10) == [10]


def test_unknown_statistic_is_an_error():
    with pytest.raises(ValueError, match="unknown access statistic"):
        stat("rows", np.arange(4))


@given(base=st.integers(0, 10_000), blocks=st.integers(1, 4), lanes=st.sampled_from([32, 64, 96, 256]),
       elem=st.sampled_from([2, 4, 8]), kind=st.sampled_from(["sectors", "banks", "same"]))
@settings(max_examples=60, deadline=None)
def test_the_contiguous_shortcut_agrees_with_the_general_count(base, blocks, lanes, elem, kind):
    offsets = base + np.arange(blocks * lanes, dtype=np.int64)
    fast = access_stats(kind, offsets, None, offsets.size, lanes, elem, G)  # shortcut
    general = access_stats(kind, offsets, np.ones(offsets.size, bool), offsets.size, lanes,
                           elem, G)                                          # sorts
    assert fast.tolist() == general.tolist()
