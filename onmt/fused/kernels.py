"""Plain or fused, and the few checks that say whether a fused kernel can run now.

A model is built with kernels "plain" or "fused" (the default), a field of its Execution
(onmt/fused/execution.py: kernels, decoding precision, compile; `build_model(..., execution=...)`
logs it on its "Model ..." line), keeps it, and hands it to its submodules when it builds them:
nothing reads a global or writes a mark into a module to choose an implementation; the grad mode
only picks, among the fused kernels the execution allows, a decoding-only kernel or a training pass
(below).

    plain  the equation-shaped reference code only (onmt/modules, onmt/reinforced, onmt/models): no
           packed or prepared weights, no row blocks, no sigmoid form of the mlp score, no fast exp,
           no fused passes or per-pass products, nn.Dropout; decoding in float32 only
    fused  the kernels of this package (its __init__.py lists each with the formula it replaces and
           the test proving them equal), wherever they apply

Where a fused kernel applies is decided here, in one place:

    gradients_wanted   THE grad-mode check of the toolkit (the only call of torch.is_grad_enabled):
                       whether autograd records what is computed now. A decoding-only kernel (one
                       without a backward: packed or prepared products, the row-blocked softmax, the
                       in-place mixture, the sigmoid form of the mlp score) runs only where it is
                       False; a kernel whose gain is its written-out backward only where it is True.
    decoding_only      kernels "fused" and no gradient wanted
    fast_dtype         the dtype / autocast condition of a fused kernel: one dtype among `dtypes`,
                       autocast off (under -amp the plain code's float32 islands run instead)
    training_pass      kernels "fused", gradients wanted, fast_dtype: the teacher-forced fused
                       passes
    block_rows         the rows of one cache-sized block of a row-blocked pass: on the CPU only (on
                       CUDA and any other device one block, so a step's kernel count does not grow
                       with its rows)
"""
import torch

KERNELS = ("plain", "fused")
FLOAT32 = (torch.float32,)


def check_kernels(kernels):
    """`kernels` itself when it is "plain" or "fused", else a ValueError."""
    if kernels not in KERNELS:
        raise ValueError(f"kernels must be one of {KERNELS}, got {kernels!r}")
    return kernels


def gradients_wanted(*tensors):
    """Whether autograd records what is computed now: the grad mode is on and, when tensors are
    given, one of them requires a gradient. The toolkit's one grad-mode check (module docstring): a
    decoding-only kernel runs where this is False, whatever the caller (beam search, a greedy
    rollout, validation)."""
    if not torch.is_grad_enabled():
        return False
    return not tensors or any(t is not None and t.requires_grad for t in tensors)


def decoding_only(kernels):
    """Whether a fused kernel without a backward may run now: kernels "fused" and no gradient
    wanted."""
    return kernels == "fused" and not gradients_wanted()


def fast_dtype(*tensors, dtypes=FLOAT32):
    """Whether `tensors` (None ignored) all have one dtype, among `dtypes`, with autocast off on the
    first one's device: where the fused kernels are written for (and where -amp does not run)."""
    tensors = [t for t in tensors if t is not None]
    dtype = tensors[0].dtype
    return (dtype in dtypes and all(t.dtype == dtype for t in tensors)
            and not autocast_enabled(tensors[0].device.type))


def autocast_enabled(device_type):
    """torch.is_autocast_enabled(device_type); False on a device autocast does not know (meta)."""
    return torch.amp.is_autocast_available(device_type) and torch.is_autocast_enabled(device_type)


def training_pass(kernels, *tensors, dtypes=FLOAT32):
    """Whether a fused teacher-forced pass whose gain is its backward (onmt/fused/decoder_pass.py,
    step_attention.py) runs on `tensors`: kernels "fused", gradients wanted and fast_dtype."""
    return kernels == "fused" and gradients_wanted() and fast_dtype(*tensors, dtypes=dtypes)


def block_rows(device, n_rows, n_cols, budget):
    """Rows per block of a pass over an (n_rows, n_cols) tensor on `device`: about `budget` elements
    (a block that stays in the CPU's cache) on the CPU; all n_rows (one block) on any other device,
    where blocking would only multiply kernel launches."""
    if torch.device(device).type != "cpu":
        return max(1, n_rows)
    return max(1, budget // max(1, n_cols))
