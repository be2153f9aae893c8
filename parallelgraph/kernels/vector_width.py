"""`prefer_wide_vectors()`: let LLVM vectorize the calling kernel's loops with the widest
registers the CPU has.

On Intel's AVX-512 cores LLVM's cost model prefers 256-bit vectors (the `prefer-256-bit` tuning
of Skylake-X and later: 512-bit instructions once lowered the clock on Skylake-SP servers), so a
Numba loop over float32 uses 8 lanes where the CPU has 16, while NumPy's own AVX-512 loops use
all 16. LLVM reads a function attribute, `"prefer-vector-width"="512"`, per function; Numba has
no option for it, so this intrinsic, called at the top of a kernel, adds it to the LLVM function
being lowered (the kernel itself: the intrinsic's code is emitted into its caller). It changes
which instructions run, never what they compute: without `fastmath` every operation is rounded
as IEEE says at any width, so the bits are the same (the tests compare them), and on a CPU
without AVX-512 the attribute changes nothing.

It relies on llvmlite writing a function's attributes through `FunctionAttributes._to_list`;
if that ever changes, the call does nothing rather than fail (a test checks the attribute is
in the kernels' LLVM IR, so such a change is seen).
"""

from __future__ import annotations

from llvmlite.ir import values
from numba import types
from numba.extending import intrinsic

#: The attribute, as LLVM's IR writes it.
ATTRIBUTE = '"prefer-vector-width"="512"'


class _WideAttributes(values.FunctionAttributes):
    """A function's attributes plus the vector-width preference (a string attribute, which
    llvmlite's attribute set does not take as an item)."""

    def __bool__(self) -> bool:  # written even when no other attribute is set
        return True

    def _to_list(self, ret_type):  # type: ignore[no-untyped-def]
        return [*super()._to_list(ret_type), ATTRIBUTE]


def _widen(function: values.Function) -> bool:
    """Give `function` the wide-vector attribute (once); False where llvmlite does not allow it."""
    current = function.attributes
    if isinstance(current, _WideAttributes):
        return True
    try:
        wide = _WideAttributes()
        for name in current:
            wide.add(name)
        wide.alignstack = current.alignstack
        wide.personality = current.personality
    except (AttributeError, TypeError, ValueError):
        return False
    function.attributes = wide
    return True


@intrinsic
def prefer_wide_vectors(typingctx):
    """In `@njit` code: vectorize this kernel's loops at the CPU's widest (see the module
    docstring). Returns nothing."""

    def codegen(context, builder, signature, args):
        _widen(builder.function)
        return context.get_dummy_value()

    return types.none(), codegen
