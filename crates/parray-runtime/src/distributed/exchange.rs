//! The GPU side of a `#copy` between the parts of two types distributed by one digit each
//! (SPEC.md 3.12): kernels pack a rank's part into one block per rank, the blocks move
//! between the ranks' GPUs (`nccl`), and kernels unpack what arrived; or, when every
//! element stays on its rank, one kernel from part to part.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use parray_compiler::back::c::Dialect;
use parray_compiler::kernels::{self, ExchangeStep, Kernel};
use parray_layout::copy::{DigitExchange, RankDigit};

use crate::array::Array;
use crate::devices::device::CudaDevice;
use crate::distributed::nccl;
use crate::error::{DetourSite, Error, Result};
use crate::exec::launch::{built_kernel, run_on_gpu, BuiltKernels, Launch};
use crate::mem::buffer::same_gpu;
use crate::mem::elem::Element;
use crate::mem::kernel_arg::KernelValue;
use crate::types::DataType;

/// `#copy` between the GPU parts of two types distributed by one digit each, on rank
/// `me` (SPEC.md 3.12): with `exchange`, pack into a send buffer on the device, fill the
/// receive buffer from every rank's send buffer (the blocks of
/// every rank, in rank order, in and out: NCCL on the devices, or MPI through host
/// memory), and unpack it on the device; without (every element stays on its rank), one
/// kernel from part to part, or one device copy when both parts are in logical order.
/// Both arrays are on one GPU.
pub(crate) fn exchange_on_gpu<S: DataType, D: DataType<Elem = S::Elem>>(
    src: &Array<S>,
    dst: &mut Array<D>,
    (s_digit, d_digit): (&RankDigit, &RankDigit),
    exchange: Option<&DigitExchange>,
    me: usize,
    site: &'static DetourSite,
) -> Result<()> {
    let (s, d) = (src.buffer(), dst.buffer_mut());
    let cuda = same_gpu(s, d)?;
    // One step on the part it walks; a rank without one has nothing to move.
    let step = |step: ExchangeStep, (from, to): (u64, u64), part: usize| -> Result<()> {
        if part == 0 {
            return Ok(());
        }
        let kernel = exchange_kernel::<S, D>((step, me), || {
            kernels::exchange_kernel(
                <S::Elem as Element>::ELEM,
                step,
                (s_digit, d_digit),
                exchange,
                me as u64,
                Dialect::Cuda,
            )
        })?;
        launch_exchange(cuda, kernel, from, to, site)
    };
    let (from, to) = (s.device_address(cuda), d.device_address_mut(cuda));
    // The kernels walk the parts the digits define, which the arrays hold (an array of a
    // distributed type is created with its part, and a view of one fits in its storage).
    let (s_part, d_part) = (s_digit.part_of(me) as usize, d_digit.part_of(me) as usize);
    if s.extent() < s_part || d.extent() < d_part {
        return Err(Error::CopyUnsupported {
            reason: format!(
                "{} holds {} elements and {} {}, less than their parts ({s_part}, {d_part})",
                S::NAME,
                s.extent(),
                D::NAME,
                d.extent()
            ),
        });
    }
    let in_order = |r: &RankDigit| r.ranks == 1;
    if exchange.is_none() && in_order(s_digit) && in_order(d_digit) {
        // One rank holds both, each in logical order: the copy is a copy.
        return d.copy_prefix_from(s, s_part);
    }
    let Some(ex) = exchange else {
        return step(ExchangeStep::Local, (from, to), d_part);
    };
    let n = (ex.block() * ex.src.ranks) as usize;
    let (mut sending, mut staging) = staging_pair::<S::Elem>(cuda, n)?;
    let send = sending.device_ptr_mut(&cuda.stream).0;
    step(ExchangeStep::Pack, (from, send), s_part)?;
    nccl::move_blocks(cuda, &sending, &mut staging, ex.block() as usize)?;
    let recv = staging.device_ptr(&cuda.stream).0;
    let unpacked = step(ExchangeStep::Unpack, (recv, to), d_part);
    keep_staging_pair(cuda, n, (sending, staging));
    unpacked
}

/// The send and receive buffers of `n` elements an exchange on `cuda` uses, kept between
/// copies (an FFT repeats the same transpose; allocating and zeroing 2 x 512 MiB each time
/// cost more than moving it): taken from the last exchange of that size, else new.
fn staging_pair<T: Element>(cuda: &CudaDevice, n: usize) -> Result<(CudaSlice<T>, CudaSlice<T>)> {
    let key = (cuda.ctx.ordinal(), TypeId::of::<T>(), n);
    if let Some(kept) = STAGING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&key)
        .and_then(|b| b.downcast::<(CudaSlice<T>, CudaSlice<T>)>().ok())
    {
        return Ok(*kept);
    }
    let alloc = |what: &'static str| {
        cuda.stream
            .alloc_zeros(n)
            .map_err(|e| Error::driver("#copy", what, e))
    };
    Ok((
        alloc("allocating a send buffer")?,
        alloc("allocating a receive buffer")?,
    ))
}

/// Keeps an exchange's buffers for the next exchange of that size on that device (one
/// pair per size and element: the last one used).
fn keep_staging_pair<T: Element>(cuda: &CudaDevice, n: usize, pair: (CudaSlice<T>, CudaSlice<T>)) {
    STAGING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert((cuda.ctx.ordinal(), TypeId::of::<T>(), n), Box::new(pair));
}

type StagingPairs = HashMap<(usize, TypeId, usize), Box<dyn std::any::Any + Send>>;

static STAGING: std::sync::LazyLock<Mutex<StagingPairs>> =
    std::sync::LazyLock::new(Default::default);

/// The kernel of one step of the exchange between `S` and `D` on a rank.
fn exchange_kernel<S: 'static, D: 'static>(
    (step, me): (ExchangeStep, usize),
    make: impl FnOnce() -> parray_layout::Result<Kernel>,
) -> Result<&'static Kernel> {
    static KERNELS: BuiltKernels<(TypeId, TypeId, ExchangeStep, usize)> = OnceLock::new();
    built_kernel(
        &KERNELS,
        (TypeId::of::<S>(), TypeId::of::<D>(), step, me),
        make,
    )
}

fn launch_exchange(
    cuda: &CudaDevice,
    kernel: &'static Kernel,
    from: u64,
    to: u64,
    site: &'static DetourSite,
) -> Result<()> {
    // SAFETY: `parray_exchange(T* from, T* to)` takes these two device addresses of
    // distinct arrays on that device: a part of the source or the receive buffer, and a
    // part of the destination or the send buffer, each holding the elements its step's
    // kernel was proved within (the parts the digits define, which the caller checked the
    // arrays hold, and the buffers of every rank's block).
    unsafe {
        run_on_gpu(
            cuda,
            &Launch::mover("parray_exchange", &kernel.source, kernel.grid, site),
            &[KernelValue::U64(from), KernelValue::U64(to)],
        )?
    };
    cuda.stream
        .synchronize()
        .map_err(|e| Error::driver("#copy", "an exchange kernel", e))
}
