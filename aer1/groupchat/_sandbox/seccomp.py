"""The seccomp filter of the bubblewrap sandbox, as a classic BPF program.

It removes the kernel interfaces sandboxed code has no use for and that reach beyond the
sandbox or widen the kernel's attack surface, whatever mode bubblewrap runs in:

* new user namespaces (``clone``/``unshare`` with ``CLONE_NEWUSER``): ``EPERM``;
  ``clone3``, whose flags a filter cannot read: ``ENOSYS``, so that libc falls back to
  ``clone``;
* the kernel keyrings (``add_key``, ``request_key``, ``keyctl``), which are not
  namespaced: a key planted or read there outlives the run or belongs to the host: ``EPERM``;
* sockets of any family but ``AF_UNIX``, ``AF_INET`` and ``AF_INET6`` (``AF_NETLINK``
  would deliver host kernel events, ``AF_PACKET``, ``AF_ALG``, ``AF_VSOCK``... are kernel
  attack surface): ``EAFNOSUPPORT``;
* ``io_uring`` (its operations bypass this filter, e.g. creating sockets): ``ENOSYS``;
* ``bpf``, ``perf_event_open`` and ``userfaultfd``: ``EPERM``;
* system calls of another ABI (32-bit, x32): ``ENOSYS``.
"""

from __future__ import annotations

import errno
import platform
import socket
import struct
from dataclasses import dataclass

_CLONE_NEWUSER = 0x10000000
_X32_SYSCALL_BIT = 0x40000000
ALLOWED_SOCKET_FAMILIES = (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6)
"""The only address families ``socket`` and ``socketpair`` accept in the sandbox."""


@dataclass(frozen=True)
class _Machine:
    audit_arch: int
    """The ``AUDIT_ARCH_*`` value the kernel passes in ``seccomp_data.arch``."""
    has_x32: bool
    """Whether the x32 ABI shares this architecture's value (its calls set a high bit)."""


_MACHINES = {
    "x86_64": _Machine(audit_arch=0xC000003E, has_x32=True),
    "aarch64": _Machine(audit_arch=0xC00000B7, has_x32=False),
}
"""The machines with a syscall table, in the order of the columns of :data:`_NUMBERS`."""

_NUMBERS = {
    # name: (x86_64, aarch64), from the kernel's syscall tables
    "clone": (56, 220),
    "unshare": (272, 97),
    "clone3": (435, 435),
    "socket": (41, 198),
    "socketpair": (53, 199),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "keyctl": (250, 219),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "userfaultfd": (323, 282),
}
"""The number of each system call the filter names, one column per machine of :data:`_MACHINES`."""

_ENOSYS_CALLS = ("clone3", "io_uring_setup", "io_uring_enter", "io_uring_register")
_EPERM_CALLS = ("add_key", "request_key", "keyctl", "bpf", "perf_event_open", "userfaultfd")


@dataclass(frozen=True)
class _SyscallTable:
    machine: _Machine
    numbers: dict[str, int]
    """Each name of :data:`_NUMBERS` to its number on this machine."""


def _table(machine: str | None) -> _SyscallTable | None:
    """The syscall table of ``machine`` (default: this one), or None on an unknown machine."""
    name = machine or platform.machine()
    if name not in _MACHINES:
        return None
    column = list(_MACHINES).index(name)
    return _SyscallTable(_MACHINES[name], {call: numbers[column] for call, numbers in _NUMBERS.items()})


# Classic BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_OFFSET_NR, _OFFSET_ARCH, _OFFSET_ARG0 = 0, 4, 16

_Insn = tuple[int, "str | None", "str | None", int]
"""(opcode, jump-if-true label, jump-if-false label, operand); None falls through."""


def _program(table: _SyscallTable) -> tuple[list[_Insn], dict[str, int]]:
    """The instructions, and the index of each label (a label names the next instruction).

    Classic BPF jumps only forward, so the return blocks come last.
    """
    code: list[_Insn] = []
    labels: dict[str, int] = {}

    def at(label: str) -> None:
        labels[label] = len(code)

    def ret(label: str, value: int) -> None:
        at(label)
        code.append((_RET_K, None, None, value))

    nr = table.numbers
    code += [(_LD_W_ABS, None, None, _OFFSET_ARCH), (_JEQ_K, None, "enosys", table.machine.audit_arch)]
    code.append((_LD_W_ABS, None, None, _OFFSET_NR))
    if table.machine.has_x32:
        code.append((_JGE_K, "enosys", None, _X32_SYSCALL_BIT))
    code += [(_JEQ_K, "enosys", None, nr[call]) for call in _ENOSYS_CALLS]
    code += [(_JEQ_K, "eperm", None, nr[call]) for call in _EPERM_CALLS]
    code += [(_JEQ_K, "flags", None, nr["unshare"]), (_JEQ_K, "flags", None, nr["clone"])]
    code += [(_JEQ_K, "family", None, nr["socket"]), (_JEQ_K, "family", "allow", nr["socketpair"])]
    at("flags")
    code += [(_LD_W_ABS, None, None, _OFFSET_ARG0), (_JSET_K, "eperm", "allow", _CLONE_NEWUSER)]
    at("family")
    code.append((_LD_W_ABS, None, None, _OFFSET_ARG0))
    code += [(_JEQ_K, "allow", None, family) for family in ALLOWED_SOCKET_FAMILIES]
    ret("eafnosupport", _RET_ERRNO | errno.EAFNOSUPPORT)
    ret("allow", _RET_ALLOW)
    ret("eperm", _RET_ERRNO | errno.EPERM)
    ret("enosys", _RET_ERRNO | errno.ENOSYS)
    return code, labels


def keyctl_syscall(machine: str | None = None) -> int | None:
    """The number of the ``keyctl`` system call here, or None on an unknown machine."""
    table = _table(machine)
    return None if table is None else table.numbers["keyctl"]


def seccomp_filter(machine: str | None = None) -> bytes | None:
    """The BPF program for bubblewrap's ``--seccomp`` (rules: the module's docstring), or
    None on a machine without a known syscall table."""
    table = _table(machine)
    if table is None:
        return None
    code, labels = _program(table)

    def jump(at: int, label: str | None) -> int:
        return 0 if label is None else labels[label] - at - 1

    return b"".join(
        struct.pack("=HBBI", op, jump(at, jt), jump(at, jf), k) for at, (op, jt, jf, k) in enumerate(code)
    )
