"""The transparency-log format layer, in the C2SP formats (pure functions, no log writing).

One module per format; every name below is importable from ``aer1._tlog`` itself.

* ``_tree``: the RFC 6962 / 9162 tree: :func:`leaf_hash`, :func:`node_hash`, :func:`root_of`,
  :func:`root_hash`, :func:`tree_levels` / :func:`levels_source` (an in-memory hash source),
  :func:`inclusion_proof` / :func:`verify_inclusion`, :func:`consistency_proof` /
  :func:`verify_consistency`. A hash source is ``hash_at(level, n)``: the complete subtree hash.
* ``_note``: signed notes (c2sp.org/signed-note): :func:`parse_note`, :func:`format_note`,
  :func:`sign_note`, :func:`open_note`, :func:`check_signatures`; Ed25519 keys (type 0x01)
  :class:`Ed25519Signer` / :class:`Ed25519Verifier`; key strings :func:`format_vkey`,
  :func:`format_signer_key`; :func:`key_id_for`.
* ``_cosig``: witness cosignatures (c2sp.org/tlog-cosignature, type 0x04):
  :class:`CosignatureSigner` / :class:`CosignatureVerifier`, :func:`cosignature_message`,
  :func:`cosignature_timestamp`.
* ``_keys``: a key string of either type parsed: :func:`parse_vkey`, :func:`parse_signer_key`.
* ``_checkpoint``: :class:`Checkpoint`, :func:`parse_checkpoint`, :func:`format_checkpoint`,
  :func:`open_checkpoint` (log signature, origin, witness cosignatures).
* ``_tiles``: tile and bundle paths (:func:`tile_path`, :func:`entries_path`,
  :func:`parse_tile_path`), :func:`encode_bundle` / :func:`decode_bundle` / :func:`check_bundle`,
  :func:`grow_tiles` (the tiles an append writes), :class:`TileHashReader` (a checked hash
  source over tiles), :func:`dir_tile_reader` / :func:`dir_bundle_reader`.
* ``_proof``: offline proofs (c2sp.org/tlog-proof@v1): :class:`TlogProof`,
  :func:`parse_tlog_proof`, :func:`format_tlog_proof`, :func:`verify_tlog_proof`,
  :func:`proof_path_for` (``name.json`` -> ``name.tlog-proof``).
* ``_entry`` (imported from ``aer1._tlog._entry``): the entry bytes of a receipt (spec/log.md).

Errors: :class:`aer1.errors.LogMalformed` (the input is not the format: nothing was
checked) and :class:`aer1.errors.LogInvalid` (a well-formed input failed a check), each
message in the form "got X, want Y".
"""

from __future__ import annotations

# Each module's ``__all__`` is the one list of what it exports, here as there.
from ..errors import LogInvalid, LogMalformed
from . import _checkpoint, _cosig, _keys, _note, _proof, _tiles, _tree
from ._checkpoint import *  # noqa: F403
from ._cosig import *  # noqa: F403
from ._keys import *  # noqa: F403
from ._note import *  # noqa: F403
from ._proof import *  # noqa: F403
from ._tiles import *  # noqa: F403
from ._tree import *  # noqa: F403

__all__ = ["LogInvalid", "LogMalformed"]
__all__ += _checkpoint.__all__
__all__ += _cosig.__all__
__all__ += _keys.__all__
__all__ += _note.__all__
__all__ += _proof.__all__
__all__ += _tiles.__all__
__all__ += _tree.__all__
