"""Builder functions (`pg.matmul`, `pg.subtract`, `pg.conv2d`, ...) and the op registry behind
them.

Elementwise ops are entries of one table (`elementwise`), whose builders are made from it
(`elementwise_op`); a structured op is one `OpDef` block and its builder in the module of its
kind: `math` (add_n, matmul), `reductions` (reduce_sum, reduce_mean, reduce_max, ...),
`shape_ops` (reshape, transpose, concat, split, slice, gather, top_k, ...), `nn` (conv2d,
pooling), `composites` (softmax, layer_norm, batch_norm: builders of primitives in a named
scope), `rowwise` (the row ops the softmax and layer_norm builders make along the last axis),
`sources` (constants, placeholders, variables, random_normal). Each module lists its
builders in `__all__`; this package re-exports them, and the package re-exports exactly those
as `pg.<name>` (`from .ops import *`).
"""

from . import (
    composites,
    elementwise_op,
    indexing,
    math,
    nn,
    reductions,
    rowwise,
    shape_ops,
    sources,
)
from .composites import *  # noqa: F403
from .elementwise_op import *  # noqa: F403
from .indexing import *  # noqa: F403
from .math import *  # noqa: F403
from .nn import *  # noqa: F403
from .reductions import *  # noqa: F403
from .registry import REGISTRY as REGISTRY
from .registry import Cost as Cost
from .registry import OpDef as OpDef
from .registry import opdef as opdef
from .registry import register as register
from .shape_ops import *  # noqa: F403
from .sources import *  # noqa: F403

#: The builders, re-exported by the package as `pg.<name>` (the registry's names are imported
#: from here by name: `from parallelgraph.ops import REGISTRY, OpDef, register`).
__all__ = sorted(
    [
        *composites.__all__,
        *elementwise_op.__all__,
        *indexing.__all__,
        *math.__all__,
        *nn.__all__,
        *reductions.__all__,
        *rowwise.__all__,
        *shape_ops.__all__,
        *sources.__all__,
    ]
)
