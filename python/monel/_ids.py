# SPDX-License-Identifier: BSD-3-Clause
"""Unique ids and communicator configuration (Config, ncclConfig_t) of the Pythonic layer."""

import ctypes
import dataclasses
from typing import Optional

from . import _nccl as C
from ._errors import _check

# ---- unique id -------------------------------------------------------------


class UniqueId:
    """The rendezvous token of a new communicator: 128 opaque bytes. Send
    bytes(uid) to the other ranks (or pickle it) and rebuild with from_bytes."""

    __slots__ = ("_raw",)

    def __init__(self, raw=None):
        if raw is None:
            raw = bytes(C.NCCL_UNIQUE_ID_BYTES)
        raw = bytes(raw)
        if len(raw) != C.NCCL_UNIQUE_ID_BYTES:
            raise ValueError(
                f"a unique id is {C.NCCL_UNIQUE_ID_BYTES} bytes, not {len(raw)}"
            )
        self._raw = raw

    @classmethod
    def from_bytes(cls, b):
        return cls(b)

    def __bytes__(self):
        return self._raw

    def as_ctypes(self):
        uid = C.ncclUniqueId()
        ctypes.memmove(ctypes.byref(uid), self._raw, C.NCCL_UNIQUE_ID_BYTES)
        return uid

    def __reduce__(self):
        return (UniqueId, (self._raw,))

    def __eq__(self, other):
        return isinstance(other, UniqueId) and other._raw == self._raw

    def __hash__(self):
        return hash(self._raw)

    def __repr__(self):
        return f"<UniqueId {self._raw[:16].hex()}...>"


def get_unique_id():
    """A new UniqueId (the same one on every process when NCCL_COMM_ID is set)."""
    uid = C.ncclUniqueId()
    _check(C.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
    return UniqueId(ctypes.string_at(ctypes.addressof(uid), C.NCCL_UNIQUE_ID_BYTES))


# ---- config ----------------------------------------------------------------


@dataclasses.dataclass
class Config:
    """Options of a new communicator; None leaves the library's default."""

    blocking: Optional[bool] = None
    cga_cluster_size: Optional[int] = None
    min_ctas: Optional[int] = None
    max_ctas: Optional[int] = None
    net_name: Optional[str] = None
    split_share: Optional[bool] = None
    traffic_class: Optional[int] = None
    comm_name: Optional[str] = None
    collnet_enable: Optional[bool] = None
    cta_policy: Optional[int] = None
    shrink_share: Optional[bool] = None
    nvls_ctas: Optional[int] = None
    n_channels_per_net_peer: Optional[int] = None
    nvlink_centric_sched: Optional[bool] = None

    _FIELDS = {
        "blocking": "blocking",
        "cga_cluster_size": "cgaClusterSize",
        "min_ctas": "minCTAs",
        "max_ctas": "maxCTAs",
        "split_share": "splitShare",
        "traffic_class": "trafficClass",
        "collnet_enable": "collnetEnable",
        "cta_policy": "CTAPolicy",
        "shrink_share": "shrinkShare",
        "nvls_ctas": "nvlsCTAs",
        "n_channels_per_net_peer": "nChannelsPerNetPeer",
        "nvlink_centric_sched": "nvlinkCentricSched",
    }

    def to_ctypes(self):
        """An ncclConfig_t: NCCL_CONFIG_INITIALIZER with the fields set here."""
        cfg = C.ncclConfig_t()
        for py, c in self._FIELDS.items():
            value = getattr(self, py)
            if value is not None:
                setattr(cfg, c, int(value))
        if self.net_name is not None:
            cfg.netName = self.net_name.encode()
        if self.comm_name is not None:
            cfg.commName = self.comm_name.encode()
        return cfg


def _config_arg(config):
    """(pointer argument, object to keep alive) for a Config, ncclConfig_t, dict or None."""
    if config is None:
        return None, None
    if isinstance(config, dict):
        config = Config(**config)
    if isinstance(config, Config):
        config = config.to_ctypes()
    if not isinstance(config, C.ncclConfig_t):
        raise TypeError("config must be a monel.Config, a dict of its fields or an ncclConfig_t")
    return ctypes.byref(config), config
