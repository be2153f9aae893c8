"""Executors run a Plan: `sequential` (the reference) and `threads`; see cpu.py."""

from .cpu import SequentialExecutor, ThreadsExecutor, make_executor

__all__ = ["SequentialExecutor", "ThreadsExecutor", "make_executor"]
