"""What runs inside Spark tasks: signing rows and judging components.

Both build their Rust object once per Python worker process (Spark reuses
workers) and stream their partition: rows are read, handled in batches of
``batch`` and yielded, so a partition never sits in memory whole."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from typing import Any

from simcrawl import _simcrawl

Config = Any
"""None, a dict shaped like crawl.toml, or the path of a TOML file."""

_signers: dict[str, _simcrawl.Signer] = {}


def signer(config: Config) -> _simcrawl.Signer:
    """This worker's signer for ``config`` (OpenCC and jieba load once)."""
    key = repr(config)
    s = _signers.get(key)
    if s is None:
        s = _simcrawl.Signer(config)
        _signers[key] = s
    return s


SignedRow = tuple[Any, ...]


def sign_partition(config: Config, batch: int) -> Any:
    """A ``mapPartitions`` function: ``(order, url, title, text)`` rows to
    ``(order, url, title, sig, simhash, fp, blocks, keys, features, chars,
    error)``."""

    def run(rows: Iterable[Any]) -> Iterator[SignedRow]:
        s = signer(config)
        buf: list[tuple[int, str, str | None, str | None]] = []

        def flush() -> Iterator[SignedRow]:
            signed = s.sign([(u or "", t, x) for _, u, t, x in buf])
            for (order, url, _, _), (sig, title, simhash, fp, blocks, keys, features, chars, error) in zip(buf, signed):
                yield (order, url, title, sig, simhash, fp, blocks, keys, features, chars, error)

        for order, url, title, text in rows:
            buf.append((order, url, title, text))
            if len(buf) >= batch:
                yield from flush()
                buf = []
        if buf:
            yield from flush()

    return run


JudgedRow = tuple[Any, ...]


def judge_partition(config: Config, batch: int, spill_rows: int, reset_rows: int, spill_dir: str | None) -> Any:
    """A ``mapPartitions`` function over ``(component, order, size, sig)``
    rows sorted by component, then order: each component is fed to a
    judge in order, so each row meets exactly the rows before it that
    ``crawl dedup`` would have compared it with. Yields ``(order, kept,
    tier, duplicate_of, duplicate_of_order, distance, similarity)``.

    Components never share a key, so one in-memory judge serves many of
    them in turn (renewed between components once it holds ``reset_rows``
    documents); a component of more than ``spill_rows`` rows gets a judge
    of its own whose index is on disk (``spill_dir``, else the system's
    temporary directory), removed when the component is done."""

    def run(rows: Iterable[Any]) -> Iterator[JudgedRow]:
        # Looked up here, in the worker: a closure that named the class
        # would carry it by value, which a Rust class cannot be.
        from simcrawl._simcrawl import Judge

        memory: Judge | None = None
        judge: Judge | None = None
        disk: str | None = None
        current: int | None = None
        buf: list[tuple[bytes, int]] = []

        def flush() -> Iterator[JudgedRow]:
            assert judge is not None
            for (_, order), v in zip(buf, judge.check(buf)):
                yield (order, *v)

        try:
            for component, order, size, sig in rows:
                if component != current:
                    if buf:
                        yield from flush()
                        buf = []
                    if disk is not None:
                        judge = None
                        shutil.rmtree(disk, ignore_errors=True)
                        disk = None
                    current = component
                    if size > spill_rows:
                        if spill_dir:
                            os.makedirs(spill_dir, exist_ok=True)
                        disk = tempfile.mkdtemp(prefix="simcrawl-judge-", dir=spill_dir or None)
                        judge = Judge(config, disk)
                    else:
                        if memory is None or memory.kept() >= reset_rows:
                            memory = Judge(config)
                        judge = memory
                buf.append((sig, order))
                if len(buf) >= batch:
                    yield from flush()
                    buf = []
            if buf:
                yield from flush()
        finally:
            judge = None
            if disk is not None:
                shutil.rmtree(disk, ignore_errors=True)

    return run
