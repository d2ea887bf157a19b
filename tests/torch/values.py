# SPDX-License-Identifier: BSD-3-Clause
"""Values of the torch.distributed suite (tests/torch/test_torch.py): CPU tensors computed from
rank numbers only, so that every expected result is known without any communication library, and
their bit-exact comparison."""
import torch


# (lowest value, number of values) per dtype: integers every one of them holds exactly.
RANGES = {
    torch.float32: (-(1 << 20), 1 << 21),
    torch.float16: (-1024, 2048),
    torch.bfloat16: (-128, 256),
    torch.int32: (-(1 << 30), 1 << 31),
    torch.int64: (-(1 << 40), 1 << 41),
    torch.int8: (-128, 256),
    torch.uint8: (0, 256),
    torch.float8_e4m3fn: (-8, 16),
    torch.float8_e5m2: (-8, 16),
}


def cast(v, dt):
    """int64 or float64 CPU tensor -> dt, exactly (values are chosen to be representable)."""
    if dt in (torch.float8_e4m3fn, torch.float8_e5m2):
        return v.to(torch.float32).to(dt)
    return v.to(dt)


def pattern(seed, n, dt):
    """n values, different for different seeds and neighbouring indices, exact in dt."""
    lo, m = RANGES[dt]
    i = torch.arange(n, dtype=torch.int64)
    return cast((i * 7919 + seed * 1000003 + 12345) % m + lo, dt)


def red_input(op, r, n, dt, salt=0):
    """Rank r's input to a reduction `op` (int64; cast later). Small so that sums over up to 16
    ranks, products and averages are exact in every reducible dtype."""
    i = torch.arange(n, dtype=torch.int64) + salt
    unsigned = dt == torch.uint8
    if op in ("sum", "avg", "premul_sum"):
        return (r * 3 + i) % 5 - (0 if unsigned else 2)
    if op == "product":
        v = torch.where((r + i) % 4 == 0, 2, 1)
        if not unsigned:
            v = v * torch.where((r + 2 * i) % 3 == 0, -1, 1)
        return v
    if op in ("min", "max"):
        return (r * 5 + i * 3) % 11 - (0 if unsigned else 5)
    raise ValueError(op)


PREMUL_FACTOR = 2.0
# For bfloat16, PyTorch hands NCCL the factor as a 4-byte float with ncclScalarHostImmediate and
# NCCL takes its first typeSize(bfloat16) = 2 bytes (little-endian: the float's low half) as the
# bfloat16 factor. 2.00390625 is the float 0x40004000: its low half is the bfloat16 2.0, so the
# check stays "sum times 2" and also proves that exactly two bytes are read.
PREMUL_FACTOR_BF16_HOST = 2.00390625


def red_expected(op, ranks, n, dt, salt=0):
    vs = [red_input(op, r, n, dt, salt) for r in ranks]
    if op == "sum":
        e = sum(vs)
    elif op == "premul_sum":
        e = sum(vs) * int(PREMUL_FACTOR)
    elif op == "product":
        e = vs[0].clone()
        for v in vs[1:]:
            e = e * v
    elif op == "min":
        e = torch.stack(vs).min(0).values
    elif op == "max":
        e = torch.stack(vs).max(0).values
    elif op == "avg":
        e = sum(vs).to(torch.float64) / len(ranks)
    else:
        raise ValueError(op)
    return cast(e, dt)


class Mismatch(Exception):
    pass


_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def bits(t):
    return t.contiguous().reshape(-1).view(_BITS[t.element_size()])


def is_pow2(n):
    return n > 0 and n & (n - 1) == 0


def compare(got, exp, what="", tolerant=False):
    """Bit-exact comparison (or within 2 ulp when tolerant) of a result with its expectation."""
    got = got.detach().cpu()
    exp = exp.detach().cpu()
    if got.dtype != exp.dtype:
        raise Mismatch(f"{what}dtype {got.dtype}, expected {exp.dtype}")
    if got.numel() != exp.numel():
        raise Mismatch(f"{what}{got.numel()} elements, expected {exp.numel()}")
    g = got.reshape(-1)
    e = exp.reshape(-1)
    if tolerant:
        ulp = {torch.float32: 2.0 ** -23, torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}
        gd, ed = g.to(torch.float64), e.to(torch.float64)
        bad = (gd - ed).abs() > 2 * ulp[got.dtype] * ed.abs().clamp(min=1.0)
    else:
        bad = bits(g) != bits(e)
    if bool(bad.any()):
        idx = int(bad.nonzero()[0, 0])
        raise Mismatch(f"{what}element {idx}: got {g[idx].float().item()!r}, expected "
                       f"{e[idx].float().item()!r} ({int(bad.sum())} of {g.numel()} wrong)")
