"""Half-open time intervals [start, end) as sorted lists of disjoint pairs: union, intersection,
difference, total length. Trace analysis is built from these few operations; each is linear in
its inputs (after a sort, for `merge`)."""

from __future__ import annotations

from collections.abc import Iterable

Intervals = list[tuple[int, int]]


def merge(intervals: Iterable[tuple[int, int]]) -> Intervals:
    """Union of intervals, as a sorted list of disjoint intervals."""
    merged: Intervals = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def intersect(a: Intervals, b: Intervals) -> Intervals:
    """Intersection of two sorted disjoint interval lists; O(len(a) + len(b))."""
    result, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        low, high = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if low < high:
            result.append((low, high))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return result


def subtract(a: Intervals, b: Intervals) -> Intervals:
    """The parts of `a` not covered by `b` (both sorted and disjoint); O(len(a) + len(b))."""
    result = []
    j = 0
    for start, end in a:
        while j < len(b) and b[j][1] <= start:
            j += 1  # b's intervals that end before this one starts cannot cut a later one
        cursor, k = start, j
        while k < len(b) and b[k][0] < end:
            if b[k][0] > cursor:
                result.append((cursor, b[k][0]))
            cursor = max(cursor, b[k][1])
            k += 1
        if cursor < end:
            result.append((cursor, end))
    return result


def length(intervals: Iterable[tuple[int, int]]) -> int:
    """Total length of disjoint intervals."""
    return sum(end - start for start, end in intervals)
