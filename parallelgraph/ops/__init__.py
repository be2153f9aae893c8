"""Builder functions (`pg.matmul`, `pg.add`, ...) and the op registry behind them."""

from .math import add, add_n, matmul, multiply, reduce_mean, reduce_sum, relu, tanh
from .registry import REGISTRY, Cost, OpDef, opdef, register
from .sources import constant, placeholder, random_normal, variable

__all__ = [
    "REGISTRY",
    "Cost",
    "OpDef",
    "add",
    "add_n",
    "constant",
    "matmul",
    "multiply",
    "opdef",
    "placeholder",
    "random_normal",
    "reduce_mean",
    "reduce_sum",
    "register",
    "relu",
    "tanh",
    "variable",
]
