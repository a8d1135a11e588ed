"""A small ctypes binding of libwombatkv (include/wombatkv.h) for Python engines.

It covers what an engine needs to restore a prompt prefix: open a handle (with settings or from
the environment), look up how many leading blocks are stored, copy them into memory of its own,
and store a chain of blocks. Errors raise WombatKVError with the library's message and code; a
miss is an answer (0 blocks, or None), not an error.

The library is found through $WOMBATKV_LIB (a path to libwombatkv.so), else the linker's search
path (after `cmake --install` and `ldconfig`).
"""
import ctypes
import ctypes.util
import os

_c_char_pp = ctypes.POINTER(ctypes.c_char_p)
_size_p = ctypes.POINTER(ctypes.c_size_t)
_u8_p = ctypes.POINTER(ctypes.c_uint8)


class WombatKVError(Exception):
    """A failed call: its message and its code (WMBT_KV_ERR_* of the header, e.g. 2 for
    UNAVAILABLE)."""

    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


def _load():
    path = os.environ.get("WOMBATKV_LIB") or ctypes.util.find_library("wombatkv")
    if not path:
        raise OSError("libwombatkv not found: set WOMBATKV_LIB to its path")
    lib = ctypes.CDLL(path)
    sig = {
        "wmbt_kv_abi_version": (ctypes.c_uint32, []),
        "wmbt_kv_last_error": (ctypes.c_char_p, []),
        "wmbt_kv_last_error_code": (ctypes.c_int32, []),
        "wmbt_kv_init_from_env": (ctypes.c_void_p, []),
        "wmbt_kv_open_with_settings": (ctypes.c_void_p, [_c_char_pp, _c_char_pp, ctypes.c_size_t]),
        "wmbt_kv_free": (None, [ctypes.c_void_p]),
        "wmbt_kv_blake3_64hex": (ctypes.c_int32, [ctypes.c_char_p, ctypes.c_size_t,
                                                  ctypes.c_char_p]),
        "wmbt_kv_fingerprint_digest": (ctypes.c_int32, [ctypes.c_char_p] * 3 + [
            ctypes.c_uint32, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_char_p]),
        "wmbt_kv_lookup_block_prefix": (ctypes.c_int32, [
            ctypes.c_void_p, ctypes.c_char_p, _c_char_pp, ctypes.c_size_t, _size_p,
            ctypes.c_char_p, ctypes.c_size_t]),
        "wmbt_kv_get_kv_blocks_into": (ctypes.c_int32, [
            ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, _c_char_pp, ctypes.c_size_t,
            ctypes.POINTER(_u8_p), _size_p, _size_p, ctypes.c_char_p, ctypes.c_size_t]),
        "wmbt_kv_put_kv_blocks": (ctypes.c_int64, [
            ctypes.c_void_p, ctypes.c_char_p, _c_char_pp, ctypes.POINTER(_u8_p), _size_p,
            ctypes.c_size_t]),
        "wmbt_kv_stats_json": (ctypes.c_int32, [ctypes.c_void_p, ctypes.c_char_p,
                                                ctypes.c_size_t, _size_p]),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    if lib.wmbt_kv_abi_version() >> 16 != 1 or lib.wmbt_kv_abi_version() & 0xFFFF < 5:
        raise OSError("%s is not C ABI 1.5 or a later 1.x" % path)
    return lib


_lib = _load()


def _check(result, error_value=-1):
    if result == error_value:
        raise WombatKVError(_lib.wmbt_kv_last_error().decode(), _lib.wmbt_kv_last_error_code())
    return result


def _strings(values):
    return (ctypes.c_char_p * len(values))(*[v.encode() for v in values])


def block_key(parent_key_hex, token_ids):
    """A block's key from its parent's and its own tokens, so equal prefixes get equal keys."""
    data = bytes.fromhex(parent_key_hex) + b"".join(t.to_bytes(4, "little") for t in token_ids)
    out = ctypes.create_string_buffer(65)
    _check(_lib.wmbt_kv_blake3_64hex(data, len(data), out))
    return out.value.decode()


def fingerprint(model_id, tokenizer_id, kv_dtype, tp=1, pp=1, lora=None):
    """The 24-hex digest naming the model identity (WMBT_KV_FINGERPRINT)."""
    out = ctypes.create_string_buffer(25)
    _check(_lib.wmbt_kv_fingerprint_digest(model_id.encode(), tokenizer_id.encode(),
                                           kv_dtype.encode(), tp, pp,
                                           lora.encode() if lora else None, out))
    return out.value.decode()


class Store:
    """One handle. settings: {"WMBT_KV_DATA_DIR": ..., "WMBT_KV_FINGERPRINT": ...}, or None for
    the environment (wmbt_kv_init_from_env). Thread-safe, as the handle is."""

    def __init__(self, settings=None):
        if settings is None:
            handle = _lib.wmbt_kv_init_from_env()
        else:
            names, values = list(settings.keys()), list(settings.values())
            handle = _lib.wmbt_kv_open_with_settings(_strings(names), _strings(values),
                                                     len(names))
        self._h = _check(handle, None)

    def close(self):
        if self._h:
            _lib.wmbt_kv_free(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def lookup(self, keys, namespace=None):
        """How many leading keys are stored (as a chain from its root): RAM only."""
        matched = ctypes.c_size_t(0)
        _check(_lib.wmbt_kv_lookup_block_prefix(
            self._h, namespace and namespace.encode(), _strings(keys), len(keys),
            ctypes.byref(matched), None, 0))
        return matched.value

    def get_into(self, keys, buffers, namespace=None):
        """Copies the blocks into `buffers` (bytearrays, one per key, each large enough), all or
        nothing. Returns their lengths, or None on a miss."""
        n = len(keys)
        dsts = (_u8_p * n)(*[ctypes.cast((ctypes.c_uint8 * len(b)).from_buffer(b), _u8_p)
                             for b in buffers])
        caps = (ctypes.c_size_t * n)(*[len(b) for b in buffers])
        lens = (ctypes.c_size_t * n)()
        got = _check(_lib.wmbt_kv_get_kv_blocks_into(
            self._h, namespace and namespace.encode(), None, _strings(keys), n, dsts, caps, lens,
            None, 0))
        return list(lens) if got == 1 else None

    def put_chain(self, keys, payloads, namespace=None):
        """Stores the blocks as one chain (root first) and publishes it, durably. Pass the whole
        prefix: blocks already stored cost no second upload."""
        n = len(keys)
        owned = [(ctypes.c_uint8 * len(p)).from_buffer_copy(p) for p in payloads]
        ptrs = (_u8_p * n)(*[ctypes.cast(o, _u8_p) for o in owned])
        lens = (ctypes.c_size_t * n)(*[len(p) for p in payloads])
        return _check(_lib.wmbt_kv_put_kv_blocks(self._h, namespace and namespace.encode(),
                                                 _strings(keys), ptrs, lens, n))

    def stats(self):
        """The store's counters (docs/stats.md) as JSON text."""
        needed = ctypes.c_size_t(0)
        _lib.wmbt_kv_stats_json(self._h, None, 0, ctypes.byref(needed))
        buf = ctypes.create_string_buffer(needed.value)
        _check(_lib.wmbt_kv_stats_json(self._h, buf, len(buf), ctypes.byref(needed)))
        return buf.value.decode()
