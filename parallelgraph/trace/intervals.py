"""Half-open time intervals [start, end) as sorted lists of disjoint pairs: union, intersection,
difference, total length. Trace analysis is built from these few operations; each is linear in
its inputs (after a sort, for `merge`), or less (`intersect` of a short list and a long one)."""

from __future__ import annotations

import bisect
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
    """Intersection of two sorted disjoint interval lists; O(len(a) + len(b)), or, when one
    list is far shorter, O(k log n) for its k intervals against the other's n (a small branch
    against a large one, once per pair, was a walk over the large one each time)."""
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if len(short) * SKIP_AHEAD < len(long):
        return _intersect_few(short, long)
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


#: `intersect` looks up each interval of a list this many times shorter than the other.
SKIP_AHEAD = 16


def _intersect_few(few: Intervals, many: Intervals) -> Intervals:
    """`intersect`, by finding where each of `few` starts in `many` (bisection on the ends,
    which increase in a sorted disjoint list) and walking on only while they overlap."""
    result = []
    for start, end in few:
        k = bisect.bisect_right(many, start, key=lambda interval: interval[1])
        while k < len(many) and many[k][0] < end:
            low, high = max(start, many[k][0]), min(end, many[k][1])
            if low < high:
                result.append((low, high))
            k += 1
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
