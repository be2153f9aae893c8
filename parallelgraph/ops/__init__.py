"""Builder functions (`pg.matmul`, `pg.add`, ...) and the op registry behind them.

A new op is its `OpDef` block and builder function (in `math` or `sources`) and its kernels;
its builder is re-exported here, once: `__all__` lists the builders, and the package
re-exports exactly those as `pg.<name>` (`from .ops import *`).
"""

from .math import (
    add,
    add_n,
    exp,
    matmul,
    multiply,
    reduce_mean,
    reduce_sum,
    relu,
    sigmoid,
    tanh,
)
from .registry import REGISTRY as REGISTRY
from .registry import Cost as Cost
from .registry import OpDef as OpDef
from .registry import opdef as opdef
from .registry import register as register
from .sources import constant, placeholder, random_normal, variable

#: The builders, re-exported by the package as `pg.<name>` (the registry's names are imported
#: from here by name: `from parallelgraph.ops import REGISTRY, OpDef, register`).
__all__ = [
    "add",
    "add_n",
    "constant",
    "exp",
    "matmul",
    "multiply",
    "placeholder",
    "random_normal",
    "reduce_mean",
    "reduce_sum",
    "relu",
    "sigmoid",
    "tanh",
    "variable",
]
