"""The parallel architectures people ask "why don't my branches run in parallel?" about, as
builders on tensors of the default graph. Every independent branch is built in a scope of its
own (`head0`, `branch_3x3`, `expert2`, `member1`, `user_tower`, ...), so the timeline colours it,
`trace.overlap("head0", "head1")` measures it, and `explain()` says whether the branches ran side
by side and, if not, why.

Where the parallelism is:
- `attention`: the heads (independent until their concat), each a few matmuls and a softmax;
- `inception_block`: four branches of convolutions and a pool, concatenated;
- `resnet_block`: the main path and the shortcut (a convolution when the shape changes);
- `wide_and_deep`, `two_tower`: two towers (a linear model and an MLP; a user and an item MLP);
- `mixture_of_experts`: the experts (and the gate beside them);
- `ensemble`: the members.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..graph import Tensor, scope
from ..ops import (
    add_n,
    concat,
    constant,
    divide,
    gather,
    matmul,
    max_pool2d,
    multiply,
    reduce_sum,
    relu,
    reshape,
    sigmoid,
    softmax,
    top_k,
    variable,
    where,
)
from .layers import conv, dense, mlp


def attention(
    x: Tensor,
    heads: int = 4,
    key_width: int | None = None,
    causal: bool = False,
    name: str = "attention",
) -> Tensor:
    """Multi-head self-attention of x (batch, time, width), each head in scope `head<i>`:
    softmax(q k^T / sqrt(d)) v with q, k, v dense projections of x, the heads concatenated
    and projected back to `width`. `causal` masks each position's future.

    >>> y = pg.models.attention(pg.random_normal((2, 16, 64)), heads=4)   # (2, 16, 64)
    """
    if x.ndim != 3:
        raise ValueError(f"attention takes (batch, time, width), got {list(x.shape)}")
    time, width = x.shape[1], x.shape[2]
    key_width = key_width or max(1, width // heads)
    with scope(name):
        mask = None
        if causal:
            mask = constant(np.tril(np.ones((time, time), dtype=bool)), name="causal_mask")
        outputs = []
        for head in range(heads):
            with scope(f"head{head}"):
                q = dense(x, key_width, name="q")
                k = dense(x, key_width, name="k")
                v = dense(x, key_width, name="v")
                scores = matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(key_width))
                if mask is not None:
                    scores = where(mask, scores, -1e9)
                outputs.append(matmul(softmax(scores, axis=-1), v))
        merged = concat(outputs, axis=-1) if heads > 1 else outputs[0]
        return dense(merged, width, name="out")


#: Inception's branches in order: (scope, the layers as (kind, size) pairs).
INCEPTION_BRANCHES = (
    ("branch_1x1", (("conv", 1),)),
    ("branch_3x3", (("conv", 1), ("conv", 3))),
    ("branch_5x5", (("conv", 1), ("conv", 5))),
    ("branch_pool", (("pool", 3), ("conv", 1))),
)


def inception_block(
    x: Tensor, branches: int = 4, width: int | None = None, name: str = "inception"
) -> Tensor:
    """GoogLeNet's Inception block on an NHWC x: 1x1, 1x1 -> 3x3, 1x1 -> 5x5 and 3x3 max pool
    -> 1x1 branches of `width` channels each (default: x's channels / 2), concatenated along
    the channels. `branches` takes the first ones (1-4); more repeat a 3x3 branch
    (`branch_3x3_<i>`)."""
    if x.ndim != 4:
        raise ValueError(f"inception_block takes NHWC input, got {list(x.shape)}")
    width = width or max(1, x.shape[-1] // 2)
    with scope(name):
        outputs = []
        for index in range(branches):
            label, layers = INCEPTION_BRANCHES[min(index, len(INCEPTION_BRANCHES) - 1)]
            if index >= len(INCEPTION_BRANCHES):
                label, layers = f"branch_3x3_{index}", INCEPTION_BRANCHES[1][1]
            with scope(label):
                y = x
                for step, (kind, size) in enumerate(layers):
                    if kind == "pool":
                        y = max_pool2d(y, size, 1, padding="SAME")
                    else:
                        y = conv(y, width, size, name=f"conv{size}x{size}_{step}")
                outputs.append(y)
        return concat(outputs, axis=-1) if branches > 1 else outputs[0]


def resnet_block(
    x: Tensor, channels: int | None = None, strides: int = 1, name: str = "resnet"
) -> Tensor:
    """A ResNet basic block on an NHWC x: relu(main(x) + shortcut(x)), main = 3x3 conv, batch
    norm, relu, 3x3 conv, batch norm; the shortcut is x itself, or a 1x1 convolution with batch
    norm where the channels or the stride change (then it is work beside the main path)."""
    channels = channels or x.shape[-1]
    with scope(name):
        with scope("main"):
            y = conv(x, channels, 3, strides, "relu", normalize=True, name="conv1")
            y = conv(y, channels, 3, 1, None, normalize=True, name="conv2")
        with scope("shortcut"):
            shortcut = x
            if channels != x.shape[-1] or strides != 1:
                shortcut = conv(x, channels, 1, strides, None, normalize=True, name="projection")
        return relu(y + shortcut)


def wide_and_deep(
    wide: Tensor,
    ids: Tensor,
    vocabulary: int,
    embedding: int = 16,
    hidden: Sequence[int] = (256, 128),
    name: str = "wide_and_deep",
) -> Tensor:
    """Google's Wide & Deep: sigmoid(linear(wide) + mlp(embeddings of ids)). `wide` is
    (batch, features) floats; `ids` (batch, fields) int32/int64 indices into a vocabulary of
    `vocabulary` rows, embedded `embedding` wide and flattened. The two towers are scopes
    `wide` and `deep`."""
    with scope(name):
        with scope("wide"):
            linear = dense(wide, 1, name="linear")
        with scope("deep"):
            table = variable((vocabulary, embedding), name="embeddings", dtype=wide.dtype)
            looked_up = gather(table, ids)  # (batch, fields, embedding)
            flat = reshape(looked_up, (ids.shape[0], ids.shape[1] * embedding))
            deep = mlp(flat, [*hidden, 1])
        return sigmoid(linear + deep)


def two_tower(
    user: Tensor,
    item: Tensor,
    hidden: Sequence[int] = (256, 128),
    name: str = "two_tower",
) -> Tensor:
    """A two-tower retrieval model: an MLP of the user features and one of the item features
    (scopes `user_tower`, `item_tower`), scored by their dot product, (batch,)."""
    with scope(name):
        u = mlp(user, hidden, name="user_tower")
        v = mlp(item, hidden, name="item_tower")
        return reduce_sum(multiply(u, v), axis=-1, name="score")


def mixture_of_experts(
    x: Tensor,
    experts: int = 4,
    hidden: int = 256,
    top: int | None = None,
    name: str = "moe",
) -> Tensor:
    """A (dense) mixture of experts on x (batch, width): every expert (`expert<i>`, an MLP
    width -> hidden -> width) runs, and a softmax gate (`gate`) weighs their outputs; with `top`
    only each row's `top` largest gates count (the others are 0, the rest renormalized),
    as a sparse MoE would route. Computing all experts keeps them independent branches."""
    width = x.shape[-1]
    with scope(name):
        with scope("gate"):
            gates = softmax(dense(x, experts, name="logits"), axis=-1)
            if top is not None and top < experts:
                values, _ = top_k(gates, top)
                kept = where(gates >= values[:, top - 1 : top], gates, 0.0)
                gates = divide(kept, reduce_sum(kept, axis=-1, keepdims=True))
        outputs = []
        for index in range(experts):
            with scope(f"expert{index}"):
                output = mlp(x, [hidden, width])
                outputs.append(output * gates[:, index : index + 1])
        return add_n(outputs, name="combine")


def ensemble(
    x: Tensor,
    members: int = 4,
    hidden: Sequence[int] = (256, 256),
    outputs: int = 10,
    name: str = "ensemble",
) -> Tensor:
    """An ensemble of `members` MLPs (`member<i>`) on the same input, their outputs averaged."""
    with scope(name):
        results = [mlp(x, [*hidden, outputs], name=f"member{i}") for i in range(members)]
        return add_n(results, name="sum") * (1.0 / members)


__all__ = [
    "attention",
    "ensemble",
    "inception_block",
    "mixture_of_experts",
    "resnet_block",
    "two_tower",
    "wide_and_deep",
]
