"""SyncBatchNorm: batch normalization whose batch statistics cover every rank of a process set.

In training mode (and whenever running statistics are not tracked) each channel's mean and
biased variance are those of the whole batch, all ranks' samples together, whatever each rank's
batch size; the running statistics are updated with that mean and the unbiased variance, as a
single BatchNorm over the concatenated batch would. The backward pass reduces the two
per-channel sums the input gradient needs (sum of dy, sum of dy * (x - mean)) over the set, so
each rank's input gradient is its slice of the single-BatchNorm gradient; the weight and bias
gradients stay local (the DistributedOptimizer averages them), as in Horovod.

Horovod's SyncBatchNorm accepts CUDA tensors only; this one is written in plain torch ops and
runs on CPU and CUDA tensors alike (statistics accumulated in float64 for float64 input, float32
otherwise). Per call: one allreduce of 2C + 1 values forward, one of 2C values backward. Neither
pass synchronizes the host with the device (no device value is read on the host), and the
per-channel sums reduce over the non-channel dimensions in place (no transposed copy of the
activations). With at most one value per channel on a rank of a one-rank set training raises, as
torch.nn.SyncBatchNorm does; a set whose ranks hold fewer than 2 values in all gets NaN/inf
running variances instead of an error (telling would need a host sync).
"""

import torch
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm

from . import mpi_ops
from ._basics import global_process_set

__all__ = ["SyncBatchNorm"]


def _stat_dtype(x):
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _reduced_dims(x):
    """Every dimension but the channels (1): per-channel sums without a transposed copy."""
    return [0] + list(range(2, x.dim()))


def _shape(x):
    return [1, x.shape[1]] + [1] * (x.dim() - 2)


# No host synchronization in forward or backward: nothing reads a device value on the host
# (no .item(), no Python bool/int of a tensor), so on CUDA tensors the statistics, the reductions
# (stream-ordered) and the normalization all stay queued on the device. The count check uses
# what the host knows from the shapes (torch.nn.SyncBatchNorm's rule).
class _SyncBatchNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, factor, process_set):
        c = x.shape[1]
        local_count = x.numel() // c if c else 0
        if running_mean is not None and local_count < 2 and process_set.size() < 2:
            raise ValueError(f"SyncBatchNorm: expected more than 1 value per channel when training, got input of "
                             f"size {tuple(x.shape)} on the only rank of the process set")
        dims = _reduced_dims(x)
        xs = x.to(_stat_dtype(x))
        local = torch.cat([xs.sum(dims), (xs * xs).sum(dims), xs.new_full((1,), float(local_count))])
        total = mpi_ops.allreduce(local, op=mpi_ops.Sum, process_set=process_set)
        count = total[2 * c]
        mean = total[:c] / count
        var = (total[c:2 * c] / count - mean * mean).clamp_min(0)
        invstd = torch.rsqrt(var + eps)
        if running_mean is not None:
            with torch.no_grad():
                unbiased = var * (count / (count - 1))
                running_mean.mul_(1 - factor).add_(mean.to(running_mean.dtype), alpha=factor)
                running_var.mul_(1 - factor).add_(unbiased.to(running_var.dtype), alpha=factor)
        shape = _shape(x)
        y = (xs - mean.view(shape)) * invstd.view(shape)
        if weight is not None:
            y = y * weight.to(mean.dtype).view(shape)
        if bias is not None:
            y = y + bias.to(mean.dtype).view(shape)
        ctx.save_for_backward(x, weight, mean, invstd, count)
        ctx.process_set = process_set
        ctx.has_bias = bias is not None
        return y.to(x.dtype)

    @staticmethod
    def backward(ctx, dy):
        x, weight, mean, invstd, count = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[0:3]
        shape = _shape(x)
        dims = _reduced_dims(x)
        dys = dy.to(mean.dtype)
        xm = x.to(mean.dtype) - mean.view(shape)
        sum_dy = dys.sum(dims)
        sum_dy_xmu = (dys * xm).sum(dims)
        grad_w = (sum_dy_xmu * invstd).to(weight.dtype) if weight is not None and need_w else None
        grad_b = sum_dy.to(weight.dtype if weight is not None else dy.dtype) if ctx.has_bias and need_b else None
        grad_x = None
        if need_x:
            c = x.shape[1]
            total = mpi_ops.allreduce(torch.cat([sum_dy, sum_dy_xmu]), op=mpi_ops.Sum, process_set=ctx.process_set)
            mean_dy = (total[:c] / count).view(shape)
            mean_dy_xmu = (total[c:] / count).view(shape)
            scale = invstd.view(shape)
            if weight is not None:
                scale = scale * weight.to(mean.dtype).view(shape)
            inv2 = (invstd * invstd).view(shape)
            grad_x = ((dys - mean_dy - xm * inv2 * mean_dy_xmu) * scale).to(x.dtype)
        return grad_x, grad_w, grad_b, None, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """BatchNorm over (N, C, *) inputs with statistics over all ranks of process_set (Horovod's
    hvd.SyncBatchNorm; process_set= is a gj addition, default the global set). Arguments as
    torch.nn.BatchNorm*: num_features (C), eps, momentum (None: cumulative average), affine,
    track_running_stats. In eval mode with running statistics it is a plain BatchNorm (no
    communication). Every rank of the set must call it in the same order."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_set=global_process_set):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        self.process_set = process_set

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"SyncBatchNorm: expected at least 2D input (N, C, ...), got {input.dim()}D input "
                             f"of shape {tuple(input.shape)}")
        if input.shape[1] != self.num_features:
            raise ValueError(f"SyncBatchNorm: input has {input.shape[1]} channels (dimension 1 of shape "
                             f"{tuple(input.shape)}) but num_features={self.num_features}")

    def forward(self, input):
        self._check_input_dim(input)
        if not self.training and self.track_running_stats:
            return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias, False, 0.0,
                                self.eps)
        factor = 0.0
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        track = self.training and self.track_running_stats
        return _SyncBatchNormFunction.apply(input, self.weight, self.bias,
                                            self.running_mean if track else None,
                                            self.running_var if track else None,
                                            self.eps, factor, self.process_set)
