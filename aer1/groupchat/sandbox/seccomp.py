"""The seccomp filter of the bubblewrap sandbox, as a classic BPF program."""

from __future__ import annotations

import errno
import platform
import struct
from dataclasses import dataclass

_CLONE_NEWUSER = 0x10000000
_X32_SYSCALL_BIT = 0x40000000


@dataclass(frozen=True)
class _SyscallTable:
    audit_arch: int
    clone: int
    unshare: int
    clone3: int
    has_x32: bool


_SYSCALLS = {
    "x86_64": _SyscallTable(audit_arch=0xC000003E, clone=56, unshare=272, clone3=435, has_x32=True),
    "aarch64": _SyscallTable(audit_arch=0xC00000B7, clone=220, unshare=97, clone3=435, has_x32=False),
}

# Classic BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_OFFSET_NR, _OFFSET_ARCH, _OFFSET_ARG0 = 0, 4, 16


def seccomp_filter(machine: str | None = None) -> bytes | None:
    """The BPF program for bubblewrap's ``--seccomp``: creating a user namespace (clone or
    unshare with CLONE_NEWUSER) fails with EPERM, clone3 (whose flags a filter cannot read)
    with ENOSYS so that libc falls back to clone, and system calls of another ABI (32-bit,
    x32) with ENOSYS. None on a machine without a known syscall table."""
    table = _SYSCALLS.get(machine or platform.machine())
    if table is None:
        return None
    # (opcode, jump-if-true label, jump-if-false label, operand); labels are resolved below.
    program: list[tuple[int, str | None, str | None, int]] = [
        (_LD_W_ABS, None, None, _OFFSET_ARCH),
        (_JEQ_K, None, "enosys", table.audit_arch),
        (_LD_W_ABS, None, None, _OFFSET_NR),
    ]
    if table.has_x32:
        program.append((_JGE_K, "enosys", None, _X32_SYSCALL_BIT))
    program += [
        (_JEQ_K, "enosys", None, table.clone3),
        (_JEQ_K, "flags", None, table.unshare),
        (_JEQ_K, "flags", "allow", table.clone),
    ]
    labels = {"flags": len(program), "allow": len(program) + 2, "eperm": len(program) + 3}
    labels["enosys"] = len(program) + 4
    program += [
        (_LD_W_ABS, None, None, _OFFSET_ARG0),
        (_JSET_K, "eperm", "allow", _CLONE_NEWUSER),
        (_RET_K, None, None, _RET_ALLOW),
        (_RET_K, None, None, _RET_ERRNO | errno.EPERM),
        (_RET_K, None, None, _RET_ERRNO | errno.ENOSYS),
    ]

    def jump(at: int, label: str | None) -> int:
        return 0 if label is None else labels[label] - at - 1

    return b"".join(
        struct.pack("=HBBI", code, jump(at, jt), jump(at, jf), k) for at, (code, jt, jf, k) in enumerate(program)
    )

