#!/usr/bin/env python3
"""What an engine does with WombatKV, in miniature: a conversation's prompt is cut into blocks of
16 tokens; each turn looks up how much of its prefix is stored, restores those blocks instead of
prefilling them, "prefills" the rest (here: makes their bytes) and stores the whole chain. A
second handle, opened as after a restart, then restores the last turn's prefix in one call.

    WOMBATKV_LIB=build/src/capi/libwombatkv.so examples/python/restore_prefix.py --data-dir DIR
    ... restore_prefix.py --setting WMBT_KV_TCP_ADDR=127.0.0.1:7070   # through wombatkvd

Exits 0 when every restored byte is the byte stored, 1 otherwise.
"""
import argparse
import hashlib
import sys

import wombatkv

BLOCK_TOKENS = 16
BLOCK_BYTES = 64 << 10  # the KV cache of 16 tokens, for a small model


def kv_bytes(key):
    """Stands in for prefill: the KV cache of a block, a function of its key (and so its prefix)."""
    seed = hashlib.sha256(bytes.fromhex(key)).digest()
    return (seed * (BLOCK_BYTES // len(seed) + 1))[:BLOCK_BYTES]


def chain_keys(tokens):
    keys, parent = [], "0" * 64
    for i in range(0, len(tokens) - len(tokens) % BLOCK_TOKENS, BLOCK_TOKENS):
        parent = wombatkv.block_key(parent, tokens[i:i + BLOCK_TOKENS])
        keys.append(parent)
    return keys


def restore(store, keys):
    """The stored blocks of the longest stored prefix of `keys` (a list of bytes). An error is a
    miss for a serving engine (docs/engine.md): log it and prefill."""
    try:
        hit = store.lookup(keys)
        if not hit:
            return []
        buffers = [bytearray(BLOCK_BYTES) for _ in range(hit)]
        lens = store.get_into(keys[:hit], buffers)
    except wombatkv.WombatKVError as e:
        print("wombatkv: %s (prefilling instead)" % e, file=sys.stderr)
        return []
    if lens is None:  # evicted between the lookup and the get: prefill them too
        return []
    return [bytes(b[:n]) for b, n in zip(buffers, lens)]


def serve_turn(store, tokens):
    """Returns (blocks restored, blocks prefilled); raises if a restored block is wrong."""
    keys = chain_keys(tokens)
    restored = restore(store, keys)
    hit = len(restored)
    for key, got in zip(keys, restored):
        if got != kv_bytes(key):
            raise SystemExit("restored block %s differs from what was stored" % key[:16])
    payloads = restored + [kv_bytes(k) for k in keys[hit:]]
    store.put_chain(keys, payloads)
    return hit, len(keys) - hit


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", help="an embedded store's data directory")
    ap.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                    help="a WMBT_KV_* setting for the handle (repeatable)")
    ap.add_argument("--turns", type=int, default=4)
    args = ap.parse_args()
    settings = dict(s.split("=", 1) for s in args.setting)
    if args.data_dir:
        settings["WMBT_KV_DATA_DIR"] = args.data_dir
    settings["WMBT_KV_FINGERPRINT"] = wombatkv.fingerprint("example/tiny-model", "example/bpe",
                                                           "fp16")

    system_prompt = list(range(1000, 1000 + 3 * BLOCK_TOKENS))
    tokens = list(system_prompt)
    with wombatkv.Store(settings) as store:
        for turn in range(args.turns):
            tokens += [turn * 100 + i for i in range(2 * BLOCK_TOKENS)]  # the user and the answer
            hit, prefilled = serve_turn(store, tokens)
            print("turn %d: %d blocks restored, %d prefilled" % (turn + 1, hit, prefilled))
            if turn > 0 and hit != len(chain_keys(tokens)) - 2:
                print("turn %d should have restored all but its 2 new blocks" % (turn + 1))
                return 1
    # As after a restart: a new handle finds the whole conversation.
    with wombatkv.Store(settings) as store:
        hit, prefilled = serve_turn(store, tokens)
        print("after reopening: %d blocks restored, %d prefilled" % (hit, prefilled))
        if prefilled != 0:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
