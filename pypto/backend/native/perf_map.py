"""Name the JIT's functions for `perf` (docs/native.md#profiling-native-code).

`perf record` samples native code by address; code the JIT loaded has no file behind it, so
`perf report` prints raw addresses (`[JIT] tid ...`). perf reads `/tmp/perf-<pid>.map`, lines
of `<start hex> <size hex> <name>`, for such code. With `PYPTO_PERF_MAP=on`, every kernel the
native backend loads (compiled or from the disk cache) appends its functions there: the grid
function, each phase's lane loops, the entry. Names come from the object's own symbol table
(ELF, the format LLVM's MCJIT emits on Linux); addresses from where the engine put them.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any, Callable

_FUNC = 2        # STT_FUNC
_SYMTAB = 2      # SHT_SYMTAB


def functions(obj: bytes) -> list[tuple[str, int, int, int]]:
    """(name, section index, value, size) of each function symbol of a little-endian ELF64
    relocatable object; [] for anything else."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return []
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize)
                for i in range(shnum)]
    found = []
    for sh_type, offset, size, link, entsize in ((s[1], s[4], s[5], s[6], s[9])
                                                 for s in sections):
        if sh_type != _SYMTAB or not entsize:
            continue
        strtab = sections[link][4]
        for at in range(offset, offset + size, entsize):
            st_name, st_info, _, shndx, value, sym_size = struct.unpack_from("<IBBHQQ", obj, at)
            if st_info & 0xF != _FUNC or not sym_size:
                continue
            end = obj.index(b"\0", strtab + st_name)
            found.append((obj[strtab + st_name:end].decode(), shndx, value, sym_size))
    return found


def write(obj: bytes, address_of: Callable[[str], int], kernel: str,
          path: Path | None = None) -> int:
    """Append the object's functions, loaded by an engine whose `address_of(name)` gives a
    global function's address, to perf's map for this process; returns the lines written.
    A local function is placed by a global one of the same section (its section's base)."""
    syms = functions(obj)
    base: dict[int, int] = {}
    for name, shndx, value, _ in syms:
        if shndx not in base:
            try:
                address = address_of(name)
            except Exception:  # (a local symbol: the engine does not export it)
                address = 0
            if address:
                base[shndx] = address - value
    lines = [f"{base[shndx] + value:x} {size:x} pypto:{kernel}:{name}\n"
             for name, shndx, value, size in syms if shndx in base]
    target = path or Path(f"/tmp/perf-{os.getpid()}.map")
    with open(target, "a") as f:
        f.writelines(lines)
    return len(lines)


def engine_lookup(engine: Any) -> Callable[[str], int]:
    return lambda name: int(engine.get_function_address(name))


__all__ = ["engine_lookup", "functions", "write"]
